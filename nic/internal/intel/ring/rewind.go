package ring

import (
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// Rewind takes the ring back after the NIC's queue was reset under it (a VF reset, which
// zeroes the queue's head and tail), without touching the mempool: the buffers still
// posted are moved, in order, to the slots from 0, their descriptors rewritten in read
// format (a frame the NIC completed and the driver had not taken yet is lost), and the
// ring then reads as posted from 0 to the tail. Program the ring again with head and
// tail 0, enable the queue, then call RingTail. Call it only with the queue disabled and
// while nothing else uses the ring. It returns the number of frames lost.
func (q *RxQueue) Rewind() (lost int) {
	mask := q.mask
	n := uint32(0)
	for s := q.next; s != q.tail; s = (s + 1) & mask {
		b := q.bufs[s]
		if b == nil {
			continue
		}
		if atomic.LoadUint32(&q.desc[s].w2)&intelnic.RxStatusDD != 0 {
			lost++
		}
		q.bufs[s] = nil
		q.bufs[n] = b
		n++
	}
	for i := range q.desc {
		q.desc[i] = advDesc{}
	}
	for s := uint32(0); s < n; s++ {
		q.desc[s].qw0 = q.bufs[s].IOVA()
	}
	q.next, q.tail, q.drop = 0, n, false
	return lost
}

// RingTail writes the tail register with the ring's tail (after Rewind and the queue's
// enable).
func (q *RxQueue) RingTail() { q.db.Ring(q.tail) }
