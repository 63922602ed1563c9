package capture

import (
	"sync/atomic"

	"github.com/uiod/uiod/nic"
)

// record is one captured frame's header in a ring slot.
type record struct {
	time    int64  // the poll's idle.Now()
	origLen uint32 // the frame's length on the wire
	capLen  uint32 // bytes kept (≤ the slot's data)
	iface   uint16 // interface (port) index in the session
	queue   uint16
	dir     uint8
}

// ring is a single-producer, single-consumer queue of fixed-size slots: the producer is
// one poll thread (inside Mirror), the consumer the session's writer. The producer never
// waits: a full ring drops the frame and counts it. head and tail count slots ever
// consumed and produced; the producer owns tail and drops, the consumer head.
type ring struct {
	recs    []record
	data    []byte // len(recs) × slot bytes
	slot    int
	mask    uint64
	head    atomic.Uint64
	tail    atomic.Uint64
	dropped []atomic.Uint64 // per interface
	seen    []atomic.Uint64 // per interface: frames that matched the filter
	busy    atomic.Bool     // the producer is inside put (see Session.stop)
}

func newRing(slots, slot, ifaces int) *ring {
	return &ring{
		recs:    make([]record, slots),
		data:    make([]byte, slots*slot),
		slot:    slot,
		mask:    uint64(slots - 1),
		dropped: make([]atomic.Uint64, ifaces),
		seen:    make([]atomic.Uint64, ifaces),
	}
}

// put copies frames into the ring, as many as fit, and counts the rest as dropped.
func (r *ring) put(iface int, dir uint8, queue int, frames []*nic.Buf, now int64) {
	tail := r.tail.Load()
	free := uint64(len(r.recs)) - (tail - r.head.Load())
	r.seen[iface].Add(uint64(len(frames)))
	n := len(frames)
	if uint64(n) > free {
		r.dropped[iface].Add(uint64(n) - free)
		n = int(free)
	}
	for _, f := range frames[:n] {
		i := tail & r.mask
		b := f.Bytes()
		c := copy(r.data[int(i)*r.slot:int(i+1)*r.slot], b)
		r.recs[i] = record{time: now, origLen: uint32(len(b)), capLen: uint32(c), iface: uint16(iface), queue: uint16(queue), dir: dir}
		tail++
	}
	r.tail.Store(tail)
}

// get returns the oldest record and its bytes, valid until release, or false if the ring
// is empty.
func (r *ring) get() (record, []byte, bool) {
	head := r.head.Load()
	if head == r.tail.Load() {
		return record{}, nil, false
	}
	i := head & r.mask
	rec := r.recs[i]
	off := int(i) * r.slot
	return rec, r.data[off : off+int(rec.capLen)], true
}

// release frees the record get returned.
func (r *ring) release() { r.head.Add(1) }
