package virtio

import (
	"sync/atomic"
	"unsafe"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
)

// vring is the driver's view of one split virtqueue in DMA memory. Ring words are
// little-endian; the driver runs on little-endian hosts only (amd64, arm64), where the
// loads and stores below need no byte swap.
//
// Ordering: the driver publishes the available index, and arms or disarms interrupts, with
// a 32-bit atomic store (on amd64 an XCHG, a full fence), so that every descriptor and
// ring entry is visible before the index, and the following load of the used index or of
// avail_event cannot be satisfied before the store is visible to the device. The used
// index is read with an atomic load before any used entry.
type vring struct {
	mem        pci.Mem
	l          ringLayout
	mask       uint16
	base       unsafe.Pointer
	availFlags uint16 // shadow of the available ring's flags
	availIdx   uint16 // shadow of the available index
}

// newVring lays a ring of size descriptors (a power of two) over mem.
func newVring(mem pci.Mem, size int) *vring {
	l := layoutFor(size)
	if len(mem.Bytes) < l.total {
		panic("virtio: ring memory too small")
	}
	return &vring{mem: mem, l: l, mask: uint16(size - 1), base: unsafe.Pointer(&mem.Bytes[0])}
}

func (r *vring) at(off int) unsafe.Pointer { return unsafe.Add(r.base, off) }

// descIOVA, availIOVA, usedIOVA and hdrIOVA are the bus addresses of the areas.
func (r *vring) descIOVA() uint64      { return r.mem.IOVA + uint64(r.l.desc) }
func (r *vring) availIOVA() uint64     { return r.mem.IOVA + uint64(r.l.avail) }
func (r *vring) usedIOVA() uint64      { return r.mem.IOVA + uint64(r.l.used) }
func (r *vring) hdrIOVA(p int) uint64  { return r.mem.IOVA + uint64(r.l.hdrs+16*p) }
func (r *vring) size() int             { return r.l.size }
func (r *vring) usedEventOff() int     { return r.l.avail + virtiospec.UsedEventOff(r.l.size) }
func (r *vring) availEventOff() int    { return r.l.used + virtiospec.AvailEventOff(r.l.size) }
func (r *vring) usedElemOff(i int) int { return r.l.used + virtiospec.UsedElemOff(i) }

// setDesc writes descriptor i whole.
func (r *vring) setDesc(i int, addr uint64, n uint32, flags, next uint16) {
	d := r.at(16 * i)
	*(*uint64)(d) = addr
	*(*uint32)(unsafe.Add(d, 8)) = n
	*(*uint16)(unsafe.Add(d, 12)) = flags
	*(*uint16)(unsafe.Add(d, 14)) = next
}

// setDescBuf writes the address and length of descriptor i.
func (r *vring) setDescBuf(i int, addr uint64, n uint32) {
	d := r.at(16 * i)
	*(*uint64)(d) = addr
	*(*uint32)(unsafe.Add(d, 8)) = n
}

// push puts head into the next available-ring entry (not yet published).
func (r *vring) push(head uint16) {
	*(*uint16)(r.at(r.l.avail + 4 + 2*int(r.availIdx&r.mask))) = head
	r.availIdx++
}

// publish stores the available ring's flags and index in one atomic store.
func (r *vring) publish() {
	atomic.StoreUint32((*uint32)(r.at(r.l.avail)), uint32(r.availFlags)|uint32(r.availIdx)<<16)
}

// usedIdx loads the device's used index.
func (r *vring) usedIdx() uint16 {
	return uint16(atomic.LoadUint32((*uint32)(r.at(r.l.used))) >> 16)
}

// usedFlags loads the device's used-ring flags.
func (r *vring) usedFlags() uint16 {
	return uint16(atomic.LoadUint32((*uint32)(r.at(r.l.used))))
}

// usedElem reads the used-ring entry at ring position pos (any index; it is masked).
func (r *vring) usedElem(pos uint16) (id, n uint32) {
	e := r.at(r.usedElemOff(int(pos & r.mask)))
	return *(*uint32)(e), *(*uint32)(unsafe.Add(e, 4))
}

// availEvent loads avail_event (EVENT_IDX): the available index the device wants to be
// notified about.
func (r *vring) availEvent() uint16 {
	return uint16(atomic.LoadUint32((*uint32)(r.at(r.availEventOff()))))
}

// setUsedEvent stores used_event (EVENT_IDX): the used index after which the device is to
// interrupt. The store is atomic and fenced.
func (r *vring) setUsedEvent(v uint16) {
	atomic.StoreUint32((*uint32)(r.at(r.usedEventOff())), uint32(v))
}

// hostLittleEndian reports whether the CPU is little-endian, as the ring code assumes.
var hostLittleEndian = func() bool {
	var probe uint16 = 1
	return *(*byte)(unsafe.Pointer(&probe)) == 1
}()
