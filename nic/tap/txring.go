package tap

import "sync/atomic"

// txRing is one TX queue towards the kernel: a bounded ring of frame copies that its
// polling thread fills (push) and the writer goroutine empties (front, pop). One
// producer, one consumer, no locks; indices only grow.
type txRing struct {
	data []byte   // slots of slotSize bytes
	lens []uint32 // frame length per slot
	mask uint64
	size int // slotSize

	head atomic.Uint64 // frames pushed (polling thread)
	_    [56]byte
	tail atomic.Uint64 // frames popped (writer)
	_    [56]byte
	// pushed is the producer's copy of head, seenTail its last look at tail.
	pushed, seenTail uint64
}

// newTxRing returns a ring of n (a power of two) slots of slotSize bytes.
func newTxRing(n, slotSize int) *txRing {
	return &txRing{data: make([]byte, n*slotSize), lens: make([]uint32, n), mask: uint64(n - 1), size: slotSize}
}

// push copies frame (at most the slot size) into the ring, or reports false when the ring
// is full. Polling thread only; call publish after a burst of pushes.
func (r *txRing) push(frame []byte) bool {
	if r.pushed-r.seenTail > r.mask {
		if r.seenTail = r.tail.Load(); r.pushed-r.seenTail > r.mask {
			return false
		}
	}
	j := r.pushed & r.mask
	off := int(j) * r.size
	r.lens[j] = uint32(copy(r.data[off:off+r.size], frame))
	r.pushed++
	return true
}

// publish makes the pushed frames visible to the writer. It reports whether any were new.
func (r *txRing) publish() bool {
	if r.head.Load() == r.pushed {
		return false
	}
	r.head.Store(r.pushed)
	return true
}

// front is the oldest frame not yet popped, or nil (writer only). It stays valid until
// pop.
func (r *txRing) front() []byte {
	t := r.tail.Load()
	if t == r.head.Load() {
		return nil
	}
	j := t & r.mask
	off := int(j) * r.size
	return r.data[off : off+int(r.lens[j])]
}

// pop frees the slot of the frame front returned (writer only).
func (r *txRing) pop() { r.tail.Store(r.tail.Load() + 1) }

// pending reports whether published frames wait for the writer.
func (r *txRing) pending() bool { return r.tail.Load() != r.head.Load() }
