package virtio

import (
	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
)

// rxQueue is one receive virtqueue. Slot p is the descriptor pair 2p (its header slot,
// device-writable) → 2p+1 (the packet buffer); the pairs are chained once at setup.
type rxQueue struct {
	vq
	pool     *nic.Mempool
	bufs     []*nic.Buf // posted buffer per slot, nil when the slot is free
	free     []uint16   // free slots (a stack)
	lastUsed uint16     // used index the driver has consumed up to
	posted   int        // slots the device holds
	batch    int        // refill when this many slots are free
	armed    bool       // interrupts requested
	quietAt  uint16     // lastUsed when used_event was last moved while disarmed
	plain    uint32     // the longest untagged frame handed over (MTU+14); a tagged one may be VLANTag more
	st       counters
}

// refillBatch is how many free slots make a refill worthwhile (at most an eighth of the
// ring, so that a ring stays at least 7/8 full).
const refillBatch = 32

func newRxQueue(q *vq, pool *nic.Mempool, bufSize, mtu int) *rxQueue {
	slots := q.ring.size() / 2
	rq := &rxQueue{vq: *q, pool: pool, bufs: make([]*nic.Buf, slots), free: make([]uint16, 0, slots), batch: max(1, min(refillBatch, slots/8)),
		plain: uint32(min(mtu+nic.EthHeader, bufSize))}
	r := rq.ring
	for p := slots - 1; p >= 0; p-- {
		r.setDesc(2*p, r.hdrIOVA(p), virtiospec.NetHdrLen, virtiospec.DescNext|virtiospec.DescWrite, uint16(2*p+1))
		r.setDesc(2*p+1, 0, uint32(bufSize), virtiospec.DescWrite, 0)
		rq.free = append(rq.free, uint16(p))
	}
	return rq
}

// fill posts a buffer in every free slot it can and publishes them. It does not notify.
func (q *rxQueue) fill() (old uint16, n int) {
	old = q.ring.availIdx
	for len(q.free) > 0 {
		b := q.pool.Get()
		if b == nil {
			break
		}
		p := q.free[len(q.free)-1]
		q.free = q.free[:len(q.free)-1]
		q.bufs[p] = b
		q.ring.setDescBuf(2*int(p)+1, b.IOVA(), uint32(b.Cap()))
		q.ring.push(2 * p)
		n++
	}
	if n > 0 {
		q.posted += n
		q.ring.publish()
	}
	return old, n
}

// refill posts buffers and notifies the device if it wants to know.
func (q *rxQueue) refill() {
	if old, n := q.fill(); n > 0 {
		q.kick(old)
	}
}

// burst implements RxBurst for this queue.
func (q *rxQueue) burst(out []*nic.Buf) int {
	r := q.ring
	ready := r.usedIdx() - q.lastUsed
	if int(ready) > q.posted {
		// More entries than buffers the device holds: the index is corrupt. Skip to it
		// (the buffers still posted stay the device's until the port closes).
		q.st.errors.Add(1)
		q.lastUsed += ready
		ready = 0
	}
	n, bytes, bad := 0, 0, 0
	for ready > 0 && n < len(out) {
		id, length := r.usedElem(q.lastUsed)
		q.lastUsed++
		ready--
		p := id / 2
		if id&1 != 0 || p >= uint32(len(q.bufs)) || q.bufs[p] == nil {
			bad++ // not a head this driver posted
			continue
		}
		b := q.bufs[p]
		q.bufs[p] = nil
		q.free = append(q.free, uint16(p))
		q.posted--
		if length <= virtiospec.NetHdrLen || length-virtiospec.NetHdrLen > q.plain && !q.tagFits(b, length-virtiospec.NetHdrLen) {
			bad++ // empty, or longer than the port's MTU allows (or the buffer holds)
			b.Free()
			continue
		}
		b.SetLen(int(length - virtiospec.NetHdrLen))
		bytes += b.Len()
		out[n] = b
		n++
	}
	if len(q.free) >= q.batch || q.posted == 0 {
		q.refill()
	}
	if q.eventIdx {
		if q.armed {
			if n > 0 || bad > 0 {
				r.setUsedEvent(q.lastUsed)
			}
		} else if q.lastUsed-q.quietAt >= virtiospec.EventIdxLag {
			r.setUsedEvent(q.lastUsed - 1)
			q.quietAt = q.lastUsed
		}
	}
	if n > 0 {
		q.st.packets.Add(uint64(n))
		q.st.bytes.Add(uint64(bytes))
	}
	if bad > 0 {
		q.st.errors.Add(uint64(bad))
	}
	return n
}

// tagFits reports whether a frame of n bytes, longer than an untagged frame of the MTU,
// is a VLAN-tagged one within VLANTag more that its buffer holds.
func (q *rxQueue) tagFits(b *nic.Buf, n uint32) bool {
	return n <= q.plain+nic.VLANTag && n <= uint32(b.Cap()) && tagged(b.Data())
}

// tagged reports whether frame carries an 802.1Q or 802.1ad tag.
func tagged(frame []byte) bool {
	if len(frame) < nic.EthHeader {
		return false
	}
	t := uint16(frame[12])<<8 | uint16(frame[13])
	return t == 0x8100 || t == 0x88a8
}

// arm requests an interrupt for the next used entry.
func (q *rxQueue) arm() {
	q.armed = true
	q.request(q.lastUsed)
}

// disarm suppresses the queue's interrupts.
func (q *rxQueue) disarm() {
	q.armed = false
	q.quietAt = q.lastUsed
	q.suppress(q.lastUsed)
}

// release gives every posted buffer back to the pool. The device must be reset first.
func (q *rxQueue) release() {
	freeBufs(q.bufs)
	q.posted = 0
}
