package ring

import (
	"fmt"
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// RxConfig describes one RX descriptor ring.
type RxConfig struct {
	DMA  pci.DMA      // the device's allocator, for the descriptor ring
	Pool *nic.Mempool // buffers posted to the ring; must be addressable by the device
	Size int          // descriptors: a power of two, at least 8
	Tail Doorbell     // the queue's RDT register
	// MTU, if set, bounds the frames handed over: MTU+14 bytes, 4 more with a VLAN tag
	// (nic.MaxFrame); a longer one is dropped and counted in Errors. 0: frames up to the
	// pool's buffer size.
	MTU int
}

// RxQueueStats are one RX queue's software counters.
type RxQueueStats struct {
	Packets   uint64 // frames handed to the caller
	Bytes     uint64
	Errors    uint64 // write-backs refused: bad length, DD on a descriptor not posted
	Fragments uint64 // frames spanning several descriptors (no EOP), dropped
	NoBufs    uint64 // refills that found the mempool empty
}

// RxQueue is the driver side of one RX descriptor ring: it posts mempool buffers to the NIC
// and takes back the ones the NIC wrote frames into.
//
// Descriptors [next, tail) are posted to the NIC; the rest belong to the driver and hold no
// buffer (their slots may keep a stale pointer, never read). One slot always stays unposted (RDH = RDT means "ring empty" to the NIC). Every
// write-back field is checked before use: a bad one is counted and its buffer recycled.
type RxQueue struct {
	ring        // bufs: buffer posted at each slot; tail: last value written to RDT
	next uint32 // next slot the NIC completes
	drop bool   // inside a multi-descriptor frame being dropped
	pool *nic.Mempool
	// freeThresh is how many slots the driver holds back before Burst reposts them: the
	// tail doorbell is an MMIO write (a VM exit under a hypervisor, an emulated access under
	// QEMU), so it is rung once per freeThresh descriptors, not once per burst, as DPDK's
	// rx_free_thresh does.
	freeThresh uint32
	// plain is the longest untagged frame handed over; a tagged one may be VLANTag more.
	plain int

	packets, bytes, errors, fragments, noBufs nic.Counter
}

// maxFreeThresh bounds freeThresh; a ring of n descriptors uses at most n/4.
const maxFreeThresh = 32

// NewRxQueue allocates the descriptor ring. It posts no buffers: program the ring's address
// into the NIC, enable the queue, then call Fill.
func NewRxQueue(cfg RxConfig) (*RxQueue, error) {
	if cfg.Pool == nil {
		return nil, fmt.Errorf("rx ring: no mempool")
	}
	if cfg.Tail.Reg == nil {
		return nil, fmt.Errorf("rx ring: no tail register")
	}
	r, err := newRing(cfg.DMA, cfg.Size, cfg.Tail)
	if err != nil {
		return nil, fmt.Errorf("rx %w", err)
	}
	plain := cfg.Pool.BufSize()
	if cfg.MTU > 0 {
		if nic.MaxFrame(cfg.MTU) > cfg.Pool.BufSize() {
			return nil, fmt.Errorf("rx ring: buffers of %d bytes cannot hold a frame of mtu %d", cfg.Pool.BufSize(), cfg.MTU)
		}
		plain = cfg.MTU + nic.EthHeader
	}
	return &RxQueue{ring: r, pool: cfg.Pool, plain: plain, freeThresh: uint32(max(1, min(maxFreeThresh, cfg.Size/4)))}, nil
}

// Pool is the mempool the queue posts.
func (q *RxQueue) Pool() *nic.Mempool { return q.pool }

// Tail is the last index written to the tail register.
func (q *RxQueue) Tail() uint32 { return q.tail }

// Fill posts free buffers to every unposted slot but one, then writes the tail register
// once. It returns the number of descriptors posted to the NIC.
func (q *RxQueue) Fill() int {
	q.refill()
	return int((q.tail - q.next) & q.mask)
}

// Burst moves up to len(bufs) received frames into bufs[0:n] and returns n. Once the driver
// holds freeThresh or more completed slots it reposts buffers to all of them and writes the
// tail register once. It never blocks and never allocates.
//
// The descriptors up to the ring's wrap go to takeFast, whose loop makes no call and
// indexes slices as long as the burst: no bounds check and no mask per frame
// (docs/design.md §5, "The per-frame cost"). Burst takes the first frame itself and makes
// that one call only when the descriptor after it is completed too, so a burst of one frame
// makes none; it leaves the rest (the ring's wrap, a rare descriptor) to takeMore.
func (q *RxQueue) Burst(bufs []*nic.Buf) int {
	m, tail, next := int(q.mask), int(q.tail), int(q.next)
	n := 0
	var bytes uint64
	// An empty ring ends at the first test, the DD bit at next (always a slot of the ring;
	// nothing is taken from it unless it is posted, k > 0), without a call or the count of
	// slots to take. The first frame is taken here, and takeFast is called only if the
	// descriptor after it is completed too: a burst of one frame (low-rate traffic) makes
	// no call.
	d := &q.desc[next]
	st := atomic.LoadUint32(&d.w2)
	if st&intelnic.RxStatusDD == 0 {
		goto done // not an if around the rest: that counted 5 more at batch 1
	}
	if k := min(len(bufs), (tail-next)&m, m+1-next); k > 0 {
		more := q.drop
		if !more {
			var rare *advDesc
			if length := int(atomic.LoadUint32(&d.w3) & 0xffff); st&intelnic.RxStatusEOP != 0 && uint(length-1) < uint(q.plain) {
				b := q.bufs[next]
				b.SetLen(length)
				if st&intelnic.RxStatusTS != 0 {
					b.SetRxTimestamped()
				}
				bufs[0] = b // as in takeFast
				d.w2 = 0
				n, bytes = 1, uint64(length)
				if k > 1 && atomic.LoadUint32(&q.desc[next+1].w2)&intelnic.RxStatusDD != 0 {
					var b uint64
					n, b, rare = q.takeFast(next+1, bufs[1:k])
					n++
					bytes += b
				}
			} else {
				rare = d // takeMore reads it again: its DD stays set
			}
			next = (next + n) & m
			more = rare != nil || n == k && n < len(bufs)
		}
		if more {
			q.next = uint32(next)
			n, bytes = q.takeMore(bufs, n, bytes)
			next = int(q.next)
		}
	}
done:
	q.next = uint32(next)
	// The slot at tail is never posted: a DD bit there is a write-back the NIC was not
	// given. Check it every burst, so the error shows however long refill waits.
	if d := &q.desc[tail&m]; atomic.LoadUint32(&d.w2)&intelnic.RxStatusDD != 0 {
		d.w2 = 0
		q.errors.Add(1)
	}
	if (next-tail-1)&m >= int(q.freeThresh) {
		q.refill()
	}
	if n > 0 {
		q.packets.Add(uint64(n))
		q.bytes.Add(bytes)
	}
	return n
}

// takeMore is the rest of a burst that has n frames in bufs, of bytes, and q.next at the
// ring's wrap, at a rare descriptor or in a frame being dropped: it moves frames into
// bufs[n:] as Burst does, the rare descriptors through rare, and returns the new n and
// bytes.
//
//go:noinline
func (q *RxQueue) takeMore(bufs []*nic.Buf, n int, bytes uint64) (int, uint64) {
	m, tail, next := int(q.mask), int(q.tail), int(q.next)
	for n < len(bufs) {
		k := min(len(bufs)-n, (tail-next)&m, m+1-next)
		if k == 0 {
			break // nothing posted
		}
		d := &q.desc[next] // completed, and, past the if, not to hand over as it is
		if atomic.LoadUint32(&d.w2)&intelnic.RxStatusDD == 0 {
			break
		}
		if !q.drop {
			done, b, rare := q.takeFast(next, bufs[n:n+k])
			n += done
			bytes += b
			next = (next + done) & m
			if done == k {
				continue
			}
			if d = rare; d == nil {
				break // the descriptor at next is not completed
			}
		}
		q.next = uint32(next)
		if b := q.rare(d); b != nil {
			bufs[n] = b
			n++
			bytes += uint64(b.Len())
		}
		next = int(q.next)
	}
	q.next = uint32(next)
	return n, bytes
}

// takeFast moves the frames of the completed descriptors from next on (next+len(bufs) is
// at most the ring's size) into bufs for as long as each is whole (EOP) and of a length
// from 1 to the longest untagged frame, and returns how many it moved, their bytes and,
// if it stopped at a completed descriptor it does not hand over as it is, that one (nil if
// it stopped at one not completed). The caller acts on that one reading of the status:
// reading it again could find a descriptor the NIC completed since.
//
//go:noinline
func (q *RxQueue) takeFast(next int, bufs []*nic.Buf) (int, uint64, *advDesc) {
	desc, slots := q.desc[next:next+len(bufs)], q.bufs[next:next+len(bufs)]
	plain := uint(q.plain)
	var bytes uint64
	for i := range bufs {
		d := &desc[i]
		st := atomic.LoadUint32(&d.w2)
		if st&intelnic.RxStatusDD == 0 {
			return i, bytes, nil
		}
		length := int(atomic.LoadUint32(&d.w3) & 0xffff)
		if st&intelnic.RxStatusEOP == 0 || uint(length-1) >= plain {
			return i, bytes, d
		}
		b := slots[i]
		b.SetLen(length)
		if st&intelnic.RxStatusTS != 0 {
			b.SetRxTimestamped()
		}
		bufs[i] = b // the slot's pointer stays, stale: release and Rewind read only [next, tail)
		d.w2 = 0    // the slot is ours: clear DD so a stray write-back shows up at refill
		bytes += uint64(length)
	}
	return len(bufs), bytes, nil
}

// rare takes the completed descriptor d at q.next, which the burst's inner loop does
// not hand over as it is, and moves q.next past it. A VLAN-tagged frame up to VLANTag
// bytes longer than an untagged one may be is returned, to hand over; the rest is taken
// back: a piece of a multi-descriptor frame (dropped whole), a length of 0, or a frame
// longer than the MTU allows (counted in Errors).
//
//go:noinline
func (q *RxQueue) rare(d *advDesc) *nic.Buf {
	st, length := atomic.LoadUint32(&d.w2), int(atomic.LoadUint32(&d.w3)&0xffff)
	b := q.bufs[q.next]
	q.bufs[q.next] = nil
	d.w2 = 0
	q.next = (q.next + 1) & q.mask
	switch {
	case q.drop: // tail of a multi-descriptor frame
		q.drop = st&intelnic.RxStatusEOP == 0
	case st&intelnic.RxStatusEOP == 0:
		q.drop = true
		q.fragments.Add(1)
	case length > q.plain && length <= q.plain+nic.VLANTag && length <= b.Cap() && tagged(b.Data()):
		b.SetLen(length)
		if st&intelnic.RxStatusTS != 0 {
			b.SetRxTimestamped()
		}
		return b
	default: // length 0, beyond the MTU or beyond the buffer
		q.errors.Add(1)
	}
	q.pool.Put(b)
	return nil
}

// tagged reports whether frame carries an 802.1Q or 802.1ad tag.
func tagged(frame []byte) bool {
	if len(frame) < nic.EthHeader {
		return false
	}
	t := uint16(frame[12])<<8 | uint16(frame[13])
	return t == 0x8100 || t == 0x88a8
}

// refill posts buffers from tail up to the slot before next and rings the doorbell once.
// A DD bit on a slot the driver owns means the NIC wrote a descriptor it was not given: it
// is counted as an error and the slot is rewritten.
func (q *RxQueue) refill() {
	m, t := int(q.mask), int(q.tail)
	want := (int(q.next) - 1 - t) & m
	for want > 0 {
		k := min(want, m+1-t) // up to the ring's wrap
		done := q.postFree(t, k)
		t = (t + done) & m
		want -= done
		if done < k {
			q.noBufs.Add(1)
			break
		}
	}
	if t := uint32(t); t != q.tail {
		q.tail = t
		q.db.Ring(t)
	}
}

// postFree posts a buffer of the pool to each of the k slots from t on (t+k is at most the
// ring's size) and returns how many it posted, fewer if the pool ran out.
//
//go:noinline
func (q *RxQueue) postFree(t, k int) int {
	desc, slots := q.desc[t:t+k], q.bufs[t:t+k]
	pool := q.pool
	var errs uint64
	for i := range slots {
		b := pool.Get()
		if b == nil {
			k = i
			break
		}
		d := &desc[i]
		if atomic.LoadUint32(&d.w2)&intelnic.RxStatusDD != 0 {
			errs++
		}
		d.qw0 = b.IOVA()
		d.w2 = 0
		d.w3 = 0
		slots[i] = b
	}
	if errs > 0 {
		q.errors.Add(errs)
	}
	return k
}

// Release takes every posted buffer back into its pool and resets the ring to empty. Call
// it only after the NIC's queue is disabled.
func (q *RxQueue) Release() {
	q.release(q.next)
	q.next, q.drop = 0, false
}

// Free releases the descriptor ring's memory (after Release, with the queue disabled). A
// device's Close frees it too; Free is for error paths that keep the device.
func (q *RxQueue) Free() error { return q.freeMem() }

// Stats returns the queue's counters. It may be called from any goroutine.
func (q *RxQueue) Stats() RxQueueStats {
	return RxQueueStats{
		Packets:   q.packets.Load(),
		Bytes:     q.bytes.Load(),
		Errors:    q.errors.Load(),
		Fragments: q.fragments.Load(),
		NoBufs:    q.noBufs.Load(),
	}
}
