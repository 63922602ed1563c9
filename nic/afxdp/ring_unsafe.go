//go:build linux

package afxdp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The rings' memory is the kernel's, mapped into the process: these functions turn an
// mmapped region and the offsets XDP_MMAP_OFFSETS reported into typed rings. Nothing else
// in the package looks at the raw memory.

// ringWords points r's index words into mem at the offsets off; it checks that they and
// n descriptors of descSize bytes fit.
func ringWords(r *ring, mem []byte, off unix.XDPRingOffset, n, descSize int) error {
	need := off.Desc + uint64(n*descSize)
	for _, o := range []uint64{off.Producer, off.Consumer, off.Flags} {
		if o+4 > uint64(len(mem)) || o%4 != 0 {
			return fmt.Errorf("ring word at %d outside the %d-byte mapping", o, len(mem))
		}
	}
	if need > uint64(len(mem)) || off.Desc%8 != 0 {
		return fmt.Errorf("ring of %d descriptors at %d outside the %d-byte mapping", n, off.Desc, len(mem))
	}
	r.prod = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.cons = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.mask = uint32(n - 1)
	return nil
}

// newAddrRing is a fill or completion ring of n entries over mem.
func newAddrRing(mem []byte, off unix.XDPRingOffset, n int) (addrRing, error) {
	var r addrRing
	if err := ringWords(&r.ring, mem, off, n, 8); err != nil {
		return r, err
	}
	r.descs = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Desc])), n)
	return r, nil
}

// newDescRing is an RX or TX ring of n entries over mem.
func newDescRing(mem []byte, off unix.XDPRingOffset, n int) (descRing, error) {
	var r descRing
	if err := ringWords(&r.ring, mem, off, n, int(unsafe.Sizeof(unix.XDPDesc{}))); err != nil {
		return r, err
	}
	r.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off.Desc])), n)
	return r, nil
}

// ringBytes is the size of a ring's mapping.
func ringBytes(off unix.XDPRingOffset, n, descSize int) int { return int(off.Desc) + n*descSize }

const descSize = int(unsafe.Sizeof(unix.XDPDesc{}))

// getsockoptXDP reads SOL_XDP option opt of the socket into a T; n is how many bytes of
// it the kernel wrote (an older kernel's struct may be shorter).
func getsockoptXDP[T any](fd int, opt uintptr) (v T, n uint32, err error) {
	n = uint32(unsafe.Sizeof(v))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, opt,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return v, n, e
	}
	return v, n, nil
}

// getMmapOffsets reads XDP_MMAP_OFFSETS from the socket.
func getMmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	off, l, err := getsockoptXDP[unix.XDPMmapOffsets](fd, unix.XDP_MMAP_OFFSETS)
	if err != nil {
		return off, err
	}
	if l != uint32(unsafe.Sizeof(off)) {
		return off, fmt.Errorf("XDP_MMAP_OFFSETS: %d bytes, want %d (a kernel before 5.4?)", l, unsafe.Sizeof(off))
	}
	return off, nil
}

// registerUMEM registers mem (page aligned, from mmap) as the socket's UMEM in chunks of
// chunk bytes.
func registerUMEM(fd int, mem []byte, chunk int) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))),
		Len:  uint64(len(mem)),
		Size: uint32(chunk),
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return e
	}
	return nil
}

// getStatistics reads XDP_STATISTICS.
func getStatistics(fd int) (unix.XDPStatistics, error) {
	st, _, err := getsockoptXDP[unix.XDPStatistics](fd, unix.XDP_STATISTICS)
	return st, err
}

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	Cmd                                         uint32
	MaxRx, MaxTx, MaxOther, MaxCombined         uint32
	RxCount, TxCount, OtherCount, CombinedCount uint32
}

// ifreqData is struct ifreq with its union as a pointer (SIOCETHTOOL's ifr_data).
type ifreqData struct {
	Name [unix.IFNAMSIZ]byte
	Data uintptr
	_    [16]byte
}

// getChannels reads ETHTOOL_GCHANNELS for the interface name through socket fd. The
// reply's memory is on the heap (it does not move) and kept alive across the call.
func getChannels(fd int, name string) (ethtoolChannels, error) {
	ch := &ethtoolChannels{Cmd: unix.ETHTOOL_GCHANNELS}
	ifr := &ifreqData{Data: uintptr(unsafe.Pointer(ch))}
	copy(ifr.Name[:unix.IFNAMSIZ-1], name)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
	runtime.KeepAlive(ch)
	if e != 0 {
		return ethtoolChannels{}, e
	}
	return *ch, nil
}

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct{ Cmd, Data uint32 }

// setEthtoolValue runs an ethtool command that takes one value (ETHTOOL_STXCSUM, say) on
// the interface name through socket fd.
func setEthtoolValue(fd int, name string, cmd, v uint32) error {
	ev := &ethtoolValue{Cmd: cmd, Data: v}
	ifr := &ifreqData{Data: uintptr(unsafe.Pointer(ev))}
	copy(ifr.Name[:unix.IFNAMSIZ-1], name)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
	runtime.KeepAlive(ev)
	if e != 0 {
		return e
	}
	return nil
}
