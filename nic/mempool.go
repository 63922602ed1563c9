package nic

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/pci"
)

// Buf is one packet buffer in DMA memory. The zero Buf is not usable; buffers come from a
// Mempool.
type Buf struct {
	data []byte // the whole buffer
	iova uint64 // bus address of data[0]
	n    int    // frame length
	pool *Mempool
	free bool  // in the pool's free list (catches double frees)
	ts   uint8 // tsTx, tsRx: timestamp flags (timesync.go), cleared by Get
}

// Bytes is the frame: the first Len bytes of the buffer.
func (b *Buf) Bytes() []byte { return b.data[:b.n] }

// Len is the frame length.
func (b *Buf) Len() int { return b.n }

// SetLen sets the frame length; it panics if n is negative or beyond Cap.
func (b *Buf) SetLen(n int) {
	if uint(n) > uint(len(b.data)) {
		badLen(n, len(b.data))
	}
	b.n = n
}

// badLen is kept out of line so that SetLen inlines.
//
//go:noinline
func badLen(n, size int) {
	panic(fmt.Sprintf("nic: SetLen(%d) outside buffer of %d bytes", n, size))
}

// Cap is the buffer's size: the largest frame it holds.
func (b *Buf) Cap() int { return len(b.data) }

// Data is the whole buffer, regardless of Len.
func (b *Buf) Data() []byte { return b.data }

// IOVA is the bus address of the buffer's first byte.
func (b *Buf) IOVA() uint64 { return b.iova }

// Pool is the mempool the buffer belongs to.
func (b *Buf) Pool() *Mempool { return b.pool }

// Free gives the buffer back to its pool.
func (b *Buf) Free() { b.pool.Put(b) }

// Mempool is a fixed set of equal-sized packet buffers carved from one DMA allocation, with
// a LIFO free list (recently used buffers are warm in cache). Get and Put allocate nothing
// and take no locks: a Mempool belongs to one thread at a time.
type Mempool struct {
	dma     pci.DMA
	mem     pci.Mem
	bufs    []Buf
	freeIdx []*Buf // stack of free buffers
}

// NewMempool carves n buffers of bufSize bytes (each taking BufStride(bufSize)) out of
// memory from dma.
func NewMempool(dma pci.DMA, n, bufSize int) (*Mempool, error) {
	return NewMempoolStride(dma, n, bufSize, BufStride(bufSize))
}

// NewMempoolStride is NewMempool with the buffers stride bytes apart (stride ≥ bufSize, a
// multiple of BufAlign): buffer i starts at offset i×stride of the allocation, so a
// device whose frames live in fixed-size chunks at an offset (an AF_XDP UMEM: a 2 KiB
// chunk, the frame 256 bytes into it) gets buffers of exactly the frame's room, one per
// chunk, from an allocator whose memory starts at that offset.
func NewMempoolStride(dma pci.DMA, n, bufSize, stride int) (*Mempool, error) {
	if n <= 0 || bufSize <= 0 || stride < bufSize || stride%BufAlign != 0 {
		return nil, fmt.Errorf("mempool: invalid size %d × %d (stride %d)", n, bufSize, stride)
	}
	mem, err := dma.Alloc(n * stride)
	if err != nil {
		return nil, fmt.Errorf("mempool: %w", err)
	}
	p := &Mempool{dma: dma, mem: mem, bufs: make([]Buf, n), freeIdx: make([]*Buf, 0, n)}
	for i := range p.bufs {
		off := i * stride
		p.bufs[i] = Buf{data: mem.Bytes[off : off+bufSize : off+bufSize], iova: mem.IOVA + uint64(off), pool: p, free: true}
	}
	for i := n - 1; i >= 0; i-- {
		p.freeIdx = append(p.freeIdx, &p.bufs[i])
	}
	return p, nil
}

// DMA is the allocator the pool's memory came from. A buffer may be placed on a ring of a
// device whose DMA() is the same value (Reachable); otherwise it has to be copied.
func (p *Mempool) DMA() pci.DMA { return p.dma }

// Reachable reports whether a device whose allocator is dma can address the pool's
// buffers: the pool's memory came from that same allocator. Allocators of a dynamic type
// that is not comparable count as different (the compare would panic). It is the one
// answer the drivers' TX paths give for a buffer of another pool.
func (p *Mempool) Reachable(dma pci.DMA) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return p.dma == dma
}

// Get takes a free buffer with length 0, or returns nil if none is left.
func (p *Mempool) Get() *Buf {
	n := len(p.freeIdx)
	if n == 0 {
		return nil
	}
	b := p.freeIdx[n-1]
	p.freeIdx = p.freeIdx[:n-1]
	b.free = false
	b.ts = 0
	b.n = 0
	return b
}

// Put returns a buffer to the pool. It panics on a double free or a foreign buffer: both
// are bugs that would otherwise corrupt the free list and hand one buffer to the NIC twice.
func (p *Mempool) Put(b *Buf) {
	if b.pool != p {
		panic("nic: buffer returned to a foreign mempool")
	}
	if b.free {
		panic("nic: buffer freed twice")
	}
	b.free = true
	p.freeIdx = append(p.freeIdx, b)
}

// Avail is the number of free buffers.
func (p *Mempool) Avail() int { return len(p.freeIdx) }

// BufSize is the size of each buffer: the longest frame one holds.
func (p *Mempool) BufSize() int { return len(p.bufs[0].data) }

// Size is the total number of buffers.
func (p *Mempool) Size() int { return len(p.bufs) }

// ErrBuffersInUse is returned by Close when buffers are still out of the pool.
var ErrBuffersInUse = errors.New("mempool: buffers still in use")

// Close frees the pool's DMA memory. The device must no longer access it. It reports
// ErrBuffersInUse (and frees anyway) if buffers were not returned.
func (p *Mempool) Close() error {
	err := p.dma.Free(p.mem)
	if len(p.freeIdx) != len(p.bufs) && err == nil {
		err = fmt.Errorf("%w: %d of %d", ErrBuffersInUse, len(p.bufs)-len(p.freeIdx), len(p.bufs))
	}
	return err
}
