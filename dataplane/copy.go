package dataplane

import "github.com/uiod/uiod/nic"

// extraFrame is a buffer SendCopy added to a burst: it leaves through TX slot v-1 (or is
// dropped by v's reason) right after frame after's own decision.
type extraFrame struct {
	buf   *nic.Buf
	after int
	v     verdict
}

// SendCopy sends c, a buffer the App filled (a copy of frame i, as a switch floods a frame
// to several ports, possibly rewritten), out of port p on this thread's TX queue for p.
// It leaves right after frame i's own decision, so frames keep their order on every port.
// The dataplane owns c from the call on, which frees it if p has no TX queue on this
// thread (DropNoTxQueue) or its ring refuses it (DropTxFull); both count on the RX queue,
// and a copy sent counts as one of its TX packets. c must come from a pool of this poll
// thread's (one it alone gets from and frees to), never be one of b.Frames, and be
// passed once. Copies of frame i are sent in the order of the calls.
func (b *Burst) SendCopy(i int, c *nic.Buf, p PortID) {
	b.perFrame()
	b.extra = append(b.extra, extraFrame{buf: c, after: i, v: sendTo(b.slot(p))})
}

// pend queues frame f on the slot of verdict v (v ≠ 0, not a drop).
func (l *loop) pend(f *nic.Buf, v verdict) {
	s := &l.slots[v-1]
	if len(s.pend) == 0 {
		l.dirty = append(l.dirty, int16(v-1))
	}
	s.pend = append(s.pend, f)
}

// decide carries out verdict v on frame f, counting a drop on q.
func (l *loop) decide(q *queue, f *nic.Buf, v verdict) {
	switch {
	case v == 0:
		q.c.drops[DropNoVerdict]++
		q.c.local[cDrops]++
		f.Free()
	case v&dropVerdict != 0:
		q.c.drops[DropReason(v)]++
		q.c.local[cDrops]++
		f.Free()
	default:
		l.pend(f, v)
	}
}

// copiesAfter decides the copies SendCopy added after frames up to i, from b.extra[e]
// on, and returns the index of the first copy left.
func (l *loop) copiesAfter(q *queue, b *Burst, e, i int) int {
	for ; e < len(b.extra) && b.extra[e].after <= i; e++ {
		l.decide(q, b.extra[e].buf, b.extra[e].v)
		b.extra[e].buf = nil
	}
	return e
}
