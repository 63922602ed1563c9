package ring

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// ring is what an RX and a TX descriptor ring share: the descriptors in DMA memory, the
// buffer at each slot, the tail and its doorbell.
type ring struct {
	desc []advDesc
	bufs []*nic.Buf // buffer at each slot the queue holds; the others' are stale (never read)
	mask uint32
	tail uint32 // last value written to the tail register
	db   Doorbell
	mem  pci.Mem
	dma  pci.DMA
}

// newRing allocates a ring of n descriptors whose tail register is db.
func newRing(dma pci.DMA, n int, db Doorbell) (ring, error) {
	mem, d, err := ringMem(dma, n)
	if err != nil {
		return ring{}, err
	}
	return ring{desc: d, bufs: make([]*nic.Buf, n), mask: uint32(n - 1), db: db, mem: mem, dma: dma}, nil
}

// IOVA is the bus address of the descriptor ring (RDBAL/RDBAH or TDBAL/TDBAH).
func (r *ring) IOVA() uint64 { return r.mem.IOVA }

// Len is the ring's size in bytes (RDLEN or TDLEN).
func (r *ring) Len() int { return len(r.desc) * DescSize }

// Size is the number of descriptors.
func (r *ring) Size() int { return len(r.desc) }

// release gives the buffers at the slots from first up to the tail (the ones the queue
// holds) back to their pools, clears every slot, zeroes the descriptors and the tail. Call
// it only after the NIC's queue is disabled.
func (r *ring) release(first uint32) {
	for s := first; s != r.tail; s = (s + 1) & r.mask {
		if b := r.bufs[s]; b != nil {
			b.Free()
		}
	}
	clear(r.bufs)
	for i := range r.desc {
		r.desc[i] = advDesc{}
	}
	r.tail = 0
}

// freeMem releases the descriptor memory, once.
func (r *ring) freeMem() error {
	if r.mem.Bytes == nil {
		return nil
	}
	err := r.dma.Free(r.mem)
	r.mem, r.desc = pci.Mem{}, nil
	return err
}

// ringMem allocates and views a descriptor ring of n descriptors.
func ringMem(dma pci.DMA, n int) (pci.Mem, []advDesc, error) {
	if n < nic.MinRing || n&(n-1) != 0 || n > intelnic.MaxDescs {
		return pci.Mem{}, nil, fmt.Errorf("ring size %d: not a power of two in [%d, %d]", n, nic.MinRing, intelnic.MaxDescs)
	}
	if dma == nil {
		return pci.Mem{}, nil, fmt.Errorf("ring: no DMA allocator")
	}
	mem, err := dma.Alloc(n * DescSize)
	if err != nil {
		return pci.Mem{}, nil, fmt.Errorf("allocate ring of %d descriptors: %w", n, err)
	}
	d, err := descRing(mem, n)
	if err != nil {
		dma.Free(mem)
		return pci.Mem{}, nil, err
	}
	return mem, d, nil
}
