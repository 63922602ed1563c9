package ring

import (
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
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
	posted := make([]*nic.Buf, 0, len(q.bufs))
	for s := q.next; s != q.tail; s = (s + 1) & mask {
		if b := q.bufs[s]; b != nil {
			if atomic.LoadUint32(&q.desc[s].w2)&intelnic.RxStatusDD != 0 {
				lost++
			}
			posted = append(posted, b)
		}
	}
	clear(q.bufs)
	for i := range q.desc {
		q.desc[i] = advDesc{}
	}
	for s, b := range posted {
		q.bufs[s] = b
		q.desc[s].qw0 = b.IOVA()
	}
	q.next, q.tail, q.drop = 0, uint32(len(posted)), false
	return lost
}

// RingTail writes the tail register with the ring's tail (after Rewind and the queue's
// enable).
func (q *RxQueue) RingTail() { q.db.Ring(q.tail) }
