// Package mmio maps PCI BARs into the process and accesses their registers with single
// loads and stores of the register's width. vfio and uio both use it.
package mmio

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Region is a BAR mapped into the process. Each access is one load or store of the
// register's width (atomic, so the compiler neither splits, merges nor elides it); x86
// maps BARs uncached, so stores reach the device in program order and a load waits for
// earlier stores.
type Region struct {
	mem []byte
}

// Map maps size bytes of fd at offset (a BAR's region in a vfio device fd, or a sysfs
// resourceN file) for reading and writing.
func Map(fd int, offset int64, size int) (*Region, error) {
	b, err := unix.Mmap(fd, offset, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes at %#x: %w", size, offset, err)
	}
	return &Region{mem: b}, nil
}

// reg32 returns the register at off; it panics on a misaligned or out-of-range offset.
func (r *Region) reg32(off uint32) *uint32 {
	if off%4 != 0 {
		panic(fmt.Sprintf("mmio: unaligned 32-bit register access at %#x", off))
	}
	return (*uint32)(unsafe.Pointer(&r.mem[off : off+4][0]))
}

// Read32 reads a 32-bit register with one load.
func (r *Region) Read32(off uint32) uint32 { return atomic.LoadUint32(r.reg32(off)) }

// Write32 writes a 32-bit register with one store.
func (r *Region) Write32(off uint32, v uint32) { atomic.StoreUint32(r.reg32(off), v) }

// Read64 reads the low half, then the high half.
func (r *Region) Read64(off uint32) uint64 {
	if off%8 != 0 {
		panic(fmt.Sprintf("mmio: unaligned 64-bit register access at %#x", off))
	}
	lo := r.Read32(off)
	hi := r.Read32(off + 4)
	return uint64(hi)<<32 | uint64(lo)
}

// Write64 writes the low half, then the high half.
func (r *Region) Write64(off uint32, v uint64) {
	if off%8 != 0 {
		panic(fmt.Sprintf("mmio: unaligned 64-bit register access at %#x", off))
	}
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}

// Len is the size of the BAR.
func (r *Region) Len() int { return len(r.mem) }

// Unmap removes the mapping; later accesses panic (index out of range) instead of
// faulting.
func (r *Region) Unmap() error {
	if r.mem == nil {
		return nil
	}
	mem := r.mem
	r.mem = nil
	return unix.Munmap(mem)
}
