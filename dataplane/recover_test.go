package dataplane

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// recoveringPort is a fakePort that asks for Recover (nic.Recoverer) and checks the
// contract the dataplane must keep: no call on its queues overlaps Recover. It counts
// the calls inside its queues and flags Recover as running, each checking the other
// (overlaps); gen and stopped are plain fields written by Recover and read by every
// burst, so under the race detector an overlap is also a reported race. Recover drops
// the frames waiting in its RX ring, as a device reset does, and gives their buffers
// back to the ring; the first fails Recovers fail, leaving the queues stopped.
type recoveringPort struct {
	*fakePort
	needs      nic.RecoverSignal
	inside     atomic.Int32
	recovering atomic.Bool
	overlaps   atomic.Int64
	recovers   atomic.Int64
	dropped    atomic.Int64
	fails      atomic.Int32

	stopped        bool
	gen            uint64
	seenRx, seenTx uint64 // the last gen the RX queue's thread and the TX queue's saw
}

var _ nic.Recoverer = (*recoveringPort)(nil)

func (p *recoveringPort) enter(seen *uint64) {
	p.inside.Add(1)
	if p.recovering.Load() {
		p.overlaps.Add(1)
	}
	*seen = p.gen
}

func (p *recoveringPort) leave() { p.inside.Add(-1) }

func (p *recoveringPort) RxBurst(q int, bufs []*nic.Buf) int {
	p.enter(&p.seenRx)
	defer p.leave()
	if p.stopped {
		return 0
	}
	return p.fakePort.RxBurst(q, bufs)
}

func (p *recoveringPort) TxBurst(q int, bufs []*nic.Buf) int {
	p.enter(&p.seenTx)
	defer p.leave()
	if p.stopped {
		return 0 // the dataplane frees what TxBurst refuses
	}
	return p.fakePort.TxBurst(q, bufs)
}

func (p *recoveringPort) EnableRxInterrupt(q int) {
	p.enter(&p.seenRx)
	defer p.leave()
	p.fakePort.EnableRxInterrupt(q)
}

func (p *recoveringPort) DisableRxInterrupt(q int) {
	p.enter(&p.seenRx)
	defer p.leave()
	p.fakePort.DisableRxInterrupt(q)
}

func (p *recoveringPort) OnRecoverNeeded(f func()) { p.needs.Set(f) }

func (p *recoveringPort) RecoverBackoff() (first, max time.Duration) {
	return time.Millisecond, 4 * time.Millisecond
}

func (p *recoveringPort) Recover() error {
	p.recovering.Store(true)
	defer p.recovering.Store(false)
	if p.inside.Load() != 0 {
		p.overlaps.Add(1)
	}
	p.gen++
	for _, r := range p.rxq {
		r.mu.Lock()
		r.posted = append(r.posted, r.filled...) // the reset's loss: the buffers are posted again
		p.dropped.Add(int64(len(r.filled)))
		r.filled = r.filled[:0]
		r.mu.Unlock()
	}
	time.Sleep(200 * time.Microsecond) // a window for an overlapping burst to show
	if p.inside.Load() != 0 {
		p.overlaps.Add(1)
	}
	p.recovers.Add(1)
	if p.fails.Load() > 0 {
		p.fails.Add(-1)
		p.stopped = true
		return errors.New("model: the device did not come back")
	}
	p.stopped = false
	p.needs.Clear()
	return nil
}

// TestRecoverUnderTraffic has a port ask for Recover while frames flow both ways through
// two threads (l2fwd), busy and sleeping: the dataplane runs each Recover with no call
// inside the port's queues, retries the failed ones after the port's backoff, and frames
// flow again after the last; every buffer is accounted for at the end.
func TestRecoverUnderTraffic(t *testing.T) {
	for _, pol := range busyAndSleeping {
		t.Run(pol.Mode.String(), func(t *testing.T) {
			dma := &goDMA{}
			a := &recoveringPort{fakePort: newFakePort(t, dma, 1, 1, true)}
			b := newFakePort(t, dma, 1, 1, true)
			dp := newCrossed(t, pol, a, b)
			a.needs.Raise() // before Start: served once the dataplane runs
			if err := dp.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the request made before Start", func() bool { return a.recovers.Load() == 1 })

			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the wire: frames into both ports until stop
				defer close(done)
				var frame [frameLen]byte
				for seq := uint64(0); ; seq++ {
					select {
					case <-stop:
						return
					default:
					}
					makeFrame(frame[:], b.mac, a.mac, seq, 0)
					a.inject(0, frame[:])
					b.inject(0, frame[:])
					time.Sleep(20 * time.Microsecond)
				}
			}()
			sent := func() uint64 { return a.txPackets.Load() + b.txPackets.Load() }
			flowing := func(what string) {
				t.Helper()
				from := sent()
				waitFor(t, what, func() bool { return a.txPackets.Load() > 0 && sent() > from+50 })
			}
			flowing("frames before the recoveries")
			const rounds = 5
			for i := range rounds {
				before := a.recovers.Load()
				want := int64(1)
				if i == 2 {
					a.fails.Store(2) // two failures, retried after the backoff
					want = 3
				}
				a.needs.Raise()
				waitFor(t, "the recovery", func() bool { return a.recovers.Load() >= before+want && !a.needs.Pending() })
				flowing("frames after a recovery")
			}
			close(stop)
			<-done
			dp.Stop()
			if n := a.overlaps.Load(); n != 0 {
				t.Errorf("%d calls on the port's queues overlapped its Recover", n)
			}
			if a.seenRx != a.gen || a.seenTx != a.gen {
				t.Errorf("the last calls saw generations %d (RX thread), %d (TX thread); Recover wrote %d", a.seenRx, a.seenTx, a.gen)
			}
			for name, p := range map[string]*fakePort{"a": a.fakePort, "b": b} {
				if n := p.leaked(); n != 0 {
					t.Errorf("port %s: %d buffers leaked", name, n)
				}
			}
			t.Logf("%d recovers, %d frames dropped by them, %d sent", a.recovers.Load(), a.dropped.Load(), sent())
		})
	}
}

// TestRecoverNotARecoverer checks that a dataplane over ports that cannot ask for
// Recover starts no goroutine for it and stops cleanly.
func TestRecoverNotARecoverer(t *testing.T) {
	dma := &goDMA{}
	a := newFakePort(t, dma, 1, 1, false)
	dp, err := New(Config{App: Reflect, Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{
		{CPU: -1, Queues: []Queue{{Name: "a", RxPort: a}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dp.recovery.ports); n != 0 {
		t.Fatalf("%d ports to recover, want none", n)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	dp.Stop()
}
