package ring

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// TxConfig describes one TX descriptor ring.
type TxConfig struct {
	DMA  pci.DMA  // the device's allocator, for the ring and the copy pool
	Size int      // descriptors: a power of two, at least 8
	Tail Doorbell // the queue's TDT register
	// CopyBufs and BufSize size the queue's copy pool (default Size buffers of nic.DefaultBufSize bytes),
	// used for buffers the device cannot address; CopyBufs < 0 disables it and such
	// buffers are dropped and counted.
	CopyBufs int
	BufSize  int
	// Timeout is the TX hang check interval: a queue with descriptors pending and no
	// write-back for twice Timeout is hung (see Hung). 0 disables the check.
	Timeout time.Duration
	// Now is the clock of the hang check in nanoseconds (default: monotonic time).
	Now func() int64
	// MTU, if set, bounds the frames sent: MTU+14 bytes, 4 more with a VLAN tag
	// (nic.MaxFrame); a longer one is refused and counted in Errors. 0: up to MaxTxFrame.
	MTU int
}

// TxQueueStats are one TX queue's software counters.
type TxQueueStats struct {
	Packets uint64 // frames queued to the NIC
	Bytes   uint64
	Errors  uint64 // frames refused: length 0, too long, not paddable or not copyable
	Copies  uint64 // frames copied from a pool in another DMA address space
	// Timeouts counts the hangs detected: descriptors pending and not written back
	// within twice the timeout.
	Timeouts uint64
	// Discarded counts frames accepted but dropped by a queue reset before the NIC
	// fetched them.
	Discarded uint64
}

// TxQueue is the driver side of one TX descriptor ring.
//
// Every descriptor carries one whole frame with DTYP_DATA|DEXT|IFCS|EOP|RS: the NIC writes
// DD back on each, and the next burst frees the buffers of completed descriptors to their
// pools. Descriptors [clean, tail) are queued to the NIC.
//
// A buffer whose pool lives in another DMA address space than the device (a frame
// received on a vfio port and sent on a uio port, say) cannot be handed to the NIC: it is
// copied into a buffer of the queue's own copy pool and the original is freed at once.
type TxQueue struct {
	ring           // bufs: buffer queued at each slot; tail: last value written to TDT
	clean   uint32 // oldest slot not yet reclaimed
	copy    *nic.Mempool
	copyCap int // size of a copy pool buffer

	lastPool  *nic.Mempool // cache of the last pool seen and whether the device can address it
	lastLocal bool
	plain     int // the longest untagged frame sent; a tagged one may be VLANTag more

	hang hangCheck

	packets, bytes, errors, copies, timeouts, discarded nic.Counter
	marked                                              nic.Counter // frames queued with TxdMacTstamp
}

// Marked counts the frames queued with a transmit timestamp request (Buf.MarkTimestamp).
func (q *TxQueue) Marked() uint64 { return q.marked.Load() }

// NewTxQueue allocates the descriptor ring and the copy pool.
func NewTxQueue(cfg TxConfig) (*TxQueue, error) {
	if cfg.Tail.Reg == nil {
		return nil, fmt.Errorf("tx ring: no tail register")
	}
	r, err := newRing(cfg.DMA, cfg.Size, cfg.Tail)
	if err != nil {
		return nil, fmt.Errorf("tx %w", err)
	}
	q := &TxQueue{ring: r, hang: newHangCheck(cfg.Timeout, cfg.Now), plain: MaxTxFrame}
	if cfg.MTU > 0 {
		q.plain = min(cfg.MTU+nic.EthHeader, MaxTxFrame)
	}
	if cfg.CopyBufs >= 0 {
		n, size := cfg.CopyBufs, cfg.BufSize
		if n == 0 {
			n = cfg.Size
		}
		if size == 0 {
			size = nic.DefaultBufSize
		}
		if q.copy, err = nic.NewMempool(cfg.DMA, n, size); err != nil {
			cfg.DMA.Free(r.mem)
			return nil, fmt.Errorf("tx copy pool: %w", err)
		}
		q.copyCap = size
	}
	return q, nil
}

// CopyPool is the pool for frames copied from foreign address spaces (nil if disabled).
func (q *TxQueue) CopyPool() *nic.Mempool { return q.copy }

// InFlight is the number of descriptors queued and not yet reclaimed.
func (q *TxQueue) InFlight() int { return int((q.tail - q.clean) & q.mask) }

// Burst reclaims completed descriptors, queues bufs[0:n] and writes the tail register
// once. It returns n, fewer than len(bufs) when the ring (or the copy pool) is full; the
// queue owns the accepted buffers and frees them when the NIC is done. A frame shorter
// than MinTxFrame is padded with zeros up to it in its own buffer. A buffer with length 0,
// longer than MaxTxFrame, or too small to pad is accepted, counted as an error and freed.
//
// A hung queue (see Hung) takes nothing: Burst returns 0 until the port resets it.
func (q *TxQueue) Burst(bufs []*nic.Buf) int {
	if q.hang.hung {
		return 0
	}
	if q.Reclaim() == 0 && q.clean != q.tail && q.hang.timeout > 0 && q.hang.stalled() {
		q.hang.hung = true
		q.timeouts.Add(1)
		return 0
	}
	m, t := int(q.mask), int(q.tail)
	room := (int(q.clean) - 1 - t) & m // free slots; the one before clean stays empty
	n := 0
	var bytes uint64
	// A burst of one frame is queued here, without a call; the frames of a longer one up
	// to the ring's wrap go to postFast, whose loop makes no call (see RxQueue.Burst). The
	// rest of the burst (past the wrap, from a frame postFast does not take as it is) goes
	// to postMore.
	if k := min(len(bufs), room, m+1-t); k > 0 {
		if k > 1 {
			n, bytes = q.postFast(t, bufs[:k], q.knownPool(), uint(q.plain-MinTxFrame))
		} else if b := bufs[0]; b.Pool() == q.knownPool() && uint(b.Len()-MinTxFrame) <= uint(q.plain-MinTxFrame) && !b.TimestampMarked() {
			size := b.Len() // as in postFast
			d := &q.desc[t]
			d.qw0 = b.IOVA()
			d.w2 = uint32(size) | txCmd
			d.w3 = uint32(size) << intelnic.TxdPaylenShift
			q.bufs[t] = b
			n, bytes = 1, uint64(size)
		}
		t = (t + n) & m
		if n < len(bufs) && n < room {
			n, t, bytes = q.postMore(bufs, n, t, bytes)
		}
	}
	if t := uint32(t); t != q.tail {
		q.packets.Add(uint64((t - q.tail) & q.mask))
		q.bytes.Add(bytes)
		q.tail = t
		q.db.Ring(t)
	}
	return n
}

// postFast queues bufs at the slots from t on (t+len(bufs) is at most the ring's size) for
// as long as a frame needs nothing of prepare: a buffer of pool (the device can address
// it; nil: no pool is known to be), an untagged length from MinTxFrame to MinTxFrame+span
// and no timestamp mark. It returns the frames queued and their bytes. Slices as long as
// bufs and no call keep the loop in registers (its arguments too: no more than the ABI's
// nine integer registers) and free of bounds checks and of the ring's mask.
//
//go:noinline
func (q *TxQueue) postFast(t int, bufs []*nic.Buf, pool *nic.Mempool, span uint) (int, uint64) {
	desc, slots := q.desc[t:t+len(bufs)], q.bufs[t:t+len(bufs)]
	var bytes uint64
	for i, b := range bufs {
		size := b.Len()
		if b.Pool() != pool || uint(size-MinTxFrame) > span || b.TimestampMarked() {
			return i, bytes
		}
		d := &desc[i]
		d.qw0 = b.IOVA()
		d.w2 = uint32(size) | txCmd
		d.w3 = uint32(size) << intelnic.TxdPaylenShift
		slots[i] = b
		bytes += uint64(size)
	}
	return len(bufs), bytes
}

// knownPool is the pool whose buffers the device can address, of those seen last: nil if
// it cannot (postFast then takes no buffer, as no buffer's pool is nil).
func (q *TxQueue) knownPool() *nic.Mempool {
	if !q.lastLocal {
		return nil
	}
	return q.lastPool
}

// postMore is the rest of a burst that has taken n frames of bufs and queued them up to
// slot t, of bytes: it queues frames from bufs[n] on as Burst does, readies those postFast
// does not take through prepare, and returns the new n, t and bytes.
//
//go:noinline
func (q *TxQueue) postMore(bufs []*nic.Buf, n, t int, bytes uint64) (int, int, uint64) {
	m := int(q.mask)
	room := (int(q.clean) - 1 - t) & m
	span := uint(q.plain - MinTxFrame)
	for n < len(bufs) && room > 0 {
		k := min(len(bufs)-n, room, m+1-t)
		done, b := q.postFast(t, bufs[n:n+k], q.knownPool(), span)
		n += done
		room -= done
		t = (t + done) & m
		bytes += b
		if done == k {
			continue
		}
		b2, cmd, v := q.prepare(bufs[n]) // prepare may learn a new pool: knownPool above
		if v == txStop {
			break
		}
		n++
		if v == txSkip {
			continue
		}
		size := b2.Len()
		d := &q.desc[t]
		d.qw0 = b2.IOVA()
		d.w2 = uint32(size) | cmd
		d.w3 = uint32(size) << intelnic.TxdPaylenShift
		q.bufs[t] = b2
		t = (t + 1) & m
		room--
		bytes += uint64(size)
	}
	return n, t, bytes
}

// txVerdict is what prepare decided for a frame.
type txVerdict uint8

const (
	txPost txVerdict = iota // queue the buffer prepare returned
	txSkip                  // the frame was refused, counted and freed
	txStop                  // the copy pool is empty: queue nothing more this burst
)

// prepare readies a frame the burst's fast path does not take as it is: a buffer of a
// pool the device cannot address (copied into the copy pool's), one shorter than
// MinTxFrame (padded), one longer than an untagged frame of the MTU (sent if it is a
// tagged one within VLANTag more, refused otherwise), or one marked for a timestamp. It
// returns the buffer to queue and its command bits.
//
//go:noinline
func (q *TxQueue) prepare(b *nic.Buf) (*nic.Buf, uint32, txVerdict) {
	if pool := b.Pool(); pool != q.lastPool {
		q.lastPool, q.lastLocal = pool, pool.Reachable(q.dma)
	}
	if !q.lastLocal {
		if q.copy == nil || b.Len() > q.copyCap {
			q.errors.Add(1)
			b.Free()
			return nil, 0, txSkip
		}
		c := q.copy.Get()
		if c == nil {
			return nil, 0, txStop
		}
		c.SetLen(copy(c.Data(), b.Bytes()))
		if b.TimestampMarked() {
			c.MarkTimestamp()
		}
		b.Free()
		b = c
		q.copies.Add(1)
	}
	size := b.Len()
	if size < MinTxFrame && size > 0 && b.Cap() >= MinTxFrame {
		clear(b.Data()[size:MinTxFrame])
		size = MinTxFrame
		b.SetLen(size)
	}
	if size < MinTxFrame || size > min(q.plain+nic.VLANTag, MaxTxFrame) || (size > q.plain && !tagged(b.Bytes())) {
		q.errors.Add(1) // too short to pad, or longer than the MTU allows
		b.Free()
		return nil, 0, txSkip
	}
	cmd := uint32(txCmd)
	if b.TimestampMarked() {
		cmd |= intelnic.TxdMacTstamp
		q.marked.Add(1)
	}
	return b, cmd, txPost
}

// Reclaim frees the buffers of descriptors the NIC has completed (DD written back) and
// returns how many it freed. Burst calls it; a caller may call it to return buffers to
// their pools when it has nothing to send.
func (q *TxQueue) Reclaim() int {
	m, c, tail := int(q.mask), int(q.clean), int(q.tail)
	desc, slots := q.desc[:m+1], q.bufs[:m+1]
	n := 0
	for c != tail {
		if atomic.LoadUint32(&desc[c&m].w3)&intelnic.TxStatusDD == 0 {
			break
		}
		slots[c&m].Free() // the pointer stays, stale: release reads only [clean, tail)
		c = (c + 1) & m
		n++
	}
	q.clean = uint32(c)
	q.hang.done += uint64(n)
	return n
}

// Release frees every queued buffer and resets the ring to empty. Call it only after the
// NIC's queue is disabled.
func (q *TxQueue) Release() {
	q.release(q.clean)
	q.clean = 0
}

// Free releases the ring's and the copy pool's memory (after Release, with the queue
// disabled). A device's Close frees them too; Free is for error paths that keep the device.
func (q *TxQueue) Free() error {
	var err error
	if q.copy != nil {
		err = q.copy.Close()
		q.copy = nil
	}
	if e := q.freeMem(); err == nil {
		err = e
	}
	return err
}

// Stats returns the queue's counters. It may be called from any goroutine.
func (q *TxQueue) Stats() TxQueueStats {
	return TxQueueStats{
		Packets: q.packets.Load(),
		Bytes:   q.bytes.Load(),
		Errors:  q.errors.Load(),
		Copies:  q.copies.Load(),

		Timeouts:  q.timeouts.Load(),
		Discarded: q.discarded.Load(),
	}
}
