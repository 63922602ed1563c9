package dataplane

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// ringPortSize is a ringPort's RX ring: 10 ms at 100 kpps.
const ringPortSize = 1024

// spscRing is a single-producer single-consumer ring of buffers.
type spscRing struct {
	head atomic.Uint64 // next slot to take (consumer)
	_    [56]byte
	tail atomic.Uint64 // next slot to fill (producer)
	_    [56]byte
	slot [ringPortSize]*nic.Buf
}

func (r *spscRing) push(b *nic.Buf) bool {
	t := r.tail.Load()
	if t-r.head.Load() == ringPortSize {
		return false
	}
	r.slot[t%ringPortSize] = b
	r.tail.Store(t + 1)
	return true
}

func (r *spscRing) pop() *nic.Buf {
	h := r.head.Load()
	if h == r.tail.Load() {
		return nil
	}
	b := r.slot[h%ringPortSize]
	r.slot[h%ringPortSize] = nil
	r.head.Store(h + 1)
	return b
}

// ringPort is a one-queue nic.Port for the idle-policy benchmark. Unlike fakePort, its
// "wire" side (inject, the sender's thread) and its driver side (the polling thread)
// share no lock, only two rings, as a NIC and its driver share descriptor rings: a
// mutex would make the sender wait for a busy poller and put lock hand-offs into the
// latencies. posted carries empty buffers to the wire side, filled carries frames back;
// the mempool is touched by the polling thread only.
type ringPort struct {
	mac     net.HardwareAddr
	pool    *nic.Mempool
	posted  spscRing
	filled  spscRing
	enabled atomic.Bool
	vec     *irq.Vector
	onTx    func(q int, b *nic.Buf)

	// Stall detection, on the polling thread only (see autoStall).
	lastPoll   int64     // idle.Now at the previous RxBurst, 0 before the first
	slept      bool      // the interrupt was enabled since the previous RxBurst
	stalls     []autoGap // gaps longer than autoStall between polls of a waking thread
	stallsLost int       // stalls that did not fit
}

// autoGap is a time span [from, to) in idle.Now nanoseconds.
type autoGap struct{ from, to int64 }

// ringPortStalls bounds the stalls a ringPort records: a chunk of 100 ms cannot hold
// more than 20 000 gaps of 5 µs.
const ringPortStalls = 20000

func newRingPort(b *testing.B) *ringPort {
	pool, err := nic.NewMempool(&goDMA{}, 2*ringPortSize, 2048)
	if err != nil {
		b.Fatal(err)
	}
	vec, err := irq.NewEventfd(irq.MSIX, 0)
	if err != nil {
		b.Fatal(err)
	}
	p := &ringPort{mac: net.HardwareAddr{2, 0, 0, 0, 0xee, 1}, pool: pool, vec: vec, stalls: make([]autoGap, 0, ringPortStalls)}
	p.refill()
	return p
}

// refill posts free buffers until the ring is full.
func (p *ringPort) refill() {
	for p.posted.tail.Load()-p.posted.head.Load() < ringPortSize {
		b := p.pool.Get()
		if b == nil {
			return
		}
		p.posted.push(b)
	}
}

// inject receives frame as the NIC would: into the next posted buffer, then the
// interrupt if it is enabled. It reports false if no buffer was posted, and the time the
// frame became visible to the driver. The store of the frame precedes the load of
// enabled, and Arm's store of enabled precedes the Idler's re-poll, so either the
// interrupt fires or the re-poll finds the frame.
func (p *ringPort) inject(frame []byte) (ok bool, visible int64) {
	b := p.posted.pop()
	if b == nil {
		return false, 0
	}
	b.SetLen(copy(b.Data(), frame))
	p.filled.push(b) // cannot be full: filled never holds more than were posted
	visible = idle.Now()
	if p.enabled.Load() {
		p.vec.Signal()
	}
	return true, visible
}

func (p *ringPort) MAC() net.HardwareAddr { return p.mac }
func (p *ringPort) NumRxQueues() int      { return 1 }
func (p *ringPort) NumTxQueues() int      { return 1 }

func (p *ringPort) RxBurst(_ int, bufs []*nic.Buf) int {
	now := idle.Now()
	// A gap after a sleep, or before the re-poll that follows arming, is the policy's.
	if p.lastPoll != 0 && !p.slept && !p.enabled.Load() && now-p.lastPoll > int64(autoStall) {
		if len(p.stalls) < cap(p.stalls) {
			p.stalls = append(p.stalls, autoGap{p.lastPoll, now})
		} else {
			p.stallsLost++
		}
	}
	p.lastPoll, p.slept = now, false
	n := 0
	for n < len(bufs) {
		b := p.filled.pop()
		if b == nil {
			break
		}
		bufs[n] = b
		n++
	}
	if n > 0 {
		p.refill()
	}
	return n
}

func (p *ringPort) TxBurst(q int, bufs []*nic.Buf) int {
	for _, b := range bufs {
		if p.onTx != nil {
			p.onTx(q, b)
		}
		b.Free()
	}
	return len(bufs)
}

func (p *ringPort) RxVector(int) *irq.Vector { return p.vec }
func (p *ringPort) EnableRxInterrupt(int)    { p.enabled.Store(true) }
func (p *ringPort) DisableRxInterrupt(int)   { p.enabled.Store(false); p.slept = true }
func (p *ringPort) Link() nic.Link           { return nic.Link{Up: true, SpeedMbps: 10000} }
func (p *ringPort) Stats() nic.Stats         { return nic.Stats{} }

// Close releases the vector. The buffers are Go memory and go with the port.
func (p *ringPort) Close() error { return p.vec.Close() }
