package virtio

import (
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/nic"
)

// gate lets a queue's owner (the goroutine that calls its bursts) and a recovery exclude
// each other without a lock on the data path: the owner takes the gate for the length of
// a call with one compare-and-swap and gives it back with one store; a recovery closes it
// when the owner is out, and the owner's calls then do nothing until it opens again.
type gate struct{ s atomic.Int32 }

const (
	gateOpen   = 0
	gateInUse  = 1
	gateClosed = 2
)

// enter takes the gate; false means it is closed (a recovery holds the queue).
func (g *gate) enter() bool { return g.s.CompareAndSwap(gateOpen, gateInUse) }

// leave gives back the gate enter took.
func (g *gate) leave() { g.s.Store(gateOpen) }

// close waits until the owner is out of the gate and closes it, at most until deadline.
func (g *gate) close(deadline time.Time) bool {
	for !g.s.CompareAndSwap(gateOpen, gateClosed) {
		if g.s.Load() == gateClosed {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Microsecond)
	}
	return true
}

// open reopens a gate close closed.
func (g *gate) open() { g.s.CompareAndSwap(gateClosed, gateOpen) }

// gatedQueue is a receive or transmit queue: a burst behind a gate.
type gatedQueue interface {
	*rxQueue | *txQueue
	burst(bufs []*nic.Buf) int
	queueGate() *gate
}

// gatedBurst runs q's burst inside its gate, or returns 0 when a recovery holds it.
func gatedBurst[Q gatedQueue](q Q, bufs []*nic.Buf) int {
	g := q.queueGate()
	if !g.enter() {
		return 0
	}
	n := q.burst(bufs)
	g.leave()
	return n
}

func (q *rxQueue) queueGate() *gate { return &q.gate }
func (q *txQueue) queueGate() *gate { return &q.gate }
