//go:build linux

package afxdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ring is the index half of one of an XSK's four single-producer single-consumer rings,
// shared with the kernel through an mmap: uiod produces on the fill and TX rings and
// consumes the RX and completion rings. Indexes run freely over 2³² and are masked into
// the descriptor array. The shared producer and consumer words are read with atomic
// loads and written with one atomic store per burst (a full fence on amd64: the
// descriptors are visible before the index, and the need-wakeup flag loaded after it is
// the kernel's latest); between bursts the other side's index is cached.
type ring struct {
	prod, cons, flags *uint32
	mask              uint32
	local             uint32 // our side's next index (not yet published past it)
	cached            uint32 // the other side's index as last loaded
}

// produced is what a producer ring holds, as far as it knows: published and reserved
// entries the consumer has not taken.
func (r *ring) free(want uint32) uint32 {
	size := r.mask + 1
	if n := size - (r.local - r.cached); n >= want {
		return n
	}
	r.cached = atomic.LoadUint32(r.cons)
	return size - (r.local - r.cached)
}

// publish makes the entries before local visible to the consumer (producer rings).
func (r *ring) publish() { atomic.StoreUint32(r.prod, r.local) }

// avail is how many entries the consumer may take, loading the producer's index when the
// cached one shows none.
func (r *ring) avail() uint32 {
	if n := r.cached - r.local; n > 0 {
		return n
	}
	r.cached = atomic.LoadUint32(r.prod)
	return r.cached - r.local
}

// release gives the entries before local back to the producer (consumer rings).
func (r *ring) release() { atomic.StoreUint32(r.cons, r.local) }

// needWakeup reports whether the kernel asks for a syscall to make progress on this ring
// (XDP_RING_NEED_WAKEUP, set with XDP_USE_NEED_WAKEUP bound sockets).
func (r *ring) needWakeup() bool { return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0 }

// addrRing is a fill or completion ring: UMEM addresses.
type addrRing struct {
	ring
	descs []uint64
}

// descRing is an RX or TX ring: descriptors.
type descRing struct {
	ring
	descs []unix.XDPDesc
}
