package dataplane

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// parkGate holds the poll threads between two turns while Exclusive runs its function.
type parkGate struct {
	parked  sync.WaitGroup
	release chan struct{}
}

// exclusiveWait bounds how long Exclusive waits for the threads to park: a thread parks
// at the end of its turn, and a sleeping one is woken first.
const exclusiveWait = 2 * time.Second

// exclusiveMu serialises Exclusive calls (a process rarely has more than one dataplane;
// sharing the lock costs nothing).
var exclusiveMu sync.Mutex

// Exclusive runs fn while every poll thread waits between two turns of its loop, touching
// no queue, buffer or mempool: fn may close or replace a port the threads poll (a device
// the kernel asked back), whose rings hold buffers of other ports' mempools, which only
// the threads may otherwise touch. Sleeping threads are woken first (their idlers are
// rebuilt from the queues' current RX vectors, as SetPolicy with the policy in force
// does; where a queue has lost its vector, they park when their sleep ends). Before Start or after Stop fn runs at once. A thread that does not park within
// 2 s makes it fail without running fn.
func (dp *Dataplane) Exclusive(fn func()) error {
	exclusiveMu.Lock()
	defer exclusiveMu.Unlock()
	dp.mu.Lock()
	running := dp.started && !dp.stopped
	dp.mu.Unlock()
	if !running {
		fn()
		return nil
	}
	g := &parkGate{release: make(chan struct{})}
	g.parked.Add(len(dp.loops))
	for _, l := range dp.loops {
		l.park.Store(g)
	}
	defer func() {
		for _, l := range dp.loops {
			l.park.CompareAndSwap(g, nil)
		}
		close(g.release)
	}()
	// Wake sleepers: a new idler per thread, taken between turns, as a policy change is.
	// A queue without its RX vector now (a port taken out) makes that impossible; the
	// sleepers then park when their sleep ends, within wait_timeout (at most 1 s).
	if err := dp.SetPolicy(dp.Policy()); err != nil && !errors.Is(err, ErrNeedsRestart) {
		return fmt.Errorf("exclusive: wake the poll threads: %w", err)
	}
	done := make(chan struct{})
	go func() { g.parked.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exclusiveWait):
		return errors.New("exclusive: a poll thread did not come to the end of its turn within 2 s")
	}
	fn()
	return nil
}

// parkAt holds the loop's thread until g is released or the dataplane stops. It runs on
// the loop's thread between two turns.
func (l *loop) parkAt(g *parkGate) {
	clear(l.bufs) // the last bursts' buffers: no reference into a pool fn may close
	l.park.CompareAndSwap(g, nil)
	g.parked.Done()
	for {
		select {
		case <-g.release:
			return
		case <-time.After(10 * time.Millisecond):
			if l.stop.Load() {
				return
			}
		}
	}
}
