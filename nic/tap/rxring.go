package tap

import (
	"sync/atomic"

	"github.com/uiod/uiod/nic"
)

// rxRing is the RX queue between the reader goroutine and the polling thread, laid out
// like a NIC's descriptor ring: the polling thread posts empty buffers from its mempool,
// the reader fills them in order, and RxBurst takes the filled ones. It is lock-free with
// one writer per index: post and take belong to the polling thread, fill to the reader.
// Indices only grow; index i is slot i&mask, and take ≤ fill ≤ post ≤ take+len(slots).
type rxRing struct {
	slots []*nic.Buf
	mask  uint64
	pool  *nic.Mempool // the polling thread's

	take uint64 // polling thread: the next filled slot to hand out
	_    [56]byte
	post atomic.Uint64 // polling thread: slots posted
	_    [56]byte
	fill atomic.Uint64 // reader: slots filled
	_    [56]byte
	// filling is the reader's copy of fill.
	filling uint64
}

// newRxRing returns a ring of size (a power of two) slots, all posted from pool.
func newRxRing(pool *nic.Mempool, size int) *rxRing {
	r := &rxRing{slots: make([]*nic.Buf, size), mask: uint64(size - 1), pool: pool}
	r.refill()
	return r
}

// burst moves up to len(bufs) filled buffers into bufs and posts new ones in their
// place. It is RxBurst: polling thread only, no allocation, no system call.
func (r *rxRing) burst(bufs []*nic.Buf) int {
	n := r.fill.Load() - r.take
	if n == 0 {
		if r.post.Load()-r.take < uint64(len(r.slots)) {
			r.refill() // the pool ran dry at the last refill
		}
		return 0
	}
	if n > uint64(len(bufs)) {
		n = uint64(len(bufs))
	}
	for i := range n {
		j := (r.take + i) & r.mask
		bufs[i] = r.slots[j]
		r.slots[j] = nil
	}
	r.take += n
	r.refill()
	return int(n)
}

// refill posts buffers from the pool into the free slots.
func (r *rxRing) refill() {
	post := r.post.Load()
	start := post
	for post-r.take < uint64(len(r.slots)) {
		b := r.pool.Get()
		if b == nil {
			break
		}
		r.slots[post&r.mask] = b
		post++
	}
	if post != start {
		r.post.Store(post)
	}
}

// pending reports whether filled buffers wait for RxBurst (polling thread).
func (r *rxRing) pending() bool { return r.fill.Load() != r.take }

// next is the posted buffer the reader fills next, or nil if every posted buffer is
// filled (reader only).
func (r *rxRing) next() *nic.Buf {
	if r.filling == r.post.Load() {
		return nil
	}
	return r.slots[r.filling&r.mask]
}

// filled publishes the buffer next returned, its length set (reader only).
func (r *rxRing) filled() {
	r.filling++
	r.fill.Store(r.filling)
}

// reclaim gives every posted buffer back to the pool. Neither the reader nor the polling
// thread may use the ring any more.
func (r *rxRing) reclaim() {
	for i := r.take; i != r.post.Load(); i++ {
		j := i & r.mask
		if b := r.slots[j]; b != nil {
			b.Free()
			r.slots[j] = nil
		}
	}
	r.take = r.post.Load()
}
