// Package gate lets a queue's owner (the goroutine that calls its bursts) and a recovery
// that re-initialises the device under it exclude each other without a lock on the data
// path: the owner takes the gate for the length of a call with one compare-and-swap and
// gives it back with one store; a recovery closes it when the owner is out, and the
// owner's calls then do nothing until it opens again.
package gate

import (
	"sync/atomic"
	"time"
)

// Gate is one queue's gate. The zero Gate is open.
type Gate struct{ s atomic.Int32 }

const (
	open   = 0
	inUse  = 1
	closed = 2
)

// Enter takes the gate; false means it is closed (a recovery holds the queue).
func (g *Gate) Enter() bool { return g.s.CompareAndSwap(open, inUse) }

// Leave gives back the gate Enter took.
func (g *Gate) Leave() { g.s.Store(open) }

// Close waits until the owner is out of the gate and closes it, at most until deadline.
func (g *Gate) Close(deadline time.Time) bool {
	for !g.s.CompareAndSwap(open, closed) {
		if g.s.Load() == closed {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Microsecond)
	}
	return true
}

// Open reopens a gate Close closed.
func (g *Gate) Open() { g.s.CompareAndSwap(closed, open) }

// CloseAll closes every gate by deadline; if one cannot be closed, it reopens those it
// closed and reports false.
func CloseAll(deadline time.Time, gs ...*Gate) bool {
	for i, g := range gs {
		if !g.Close(deadline) {
			for _, c := range gs[:i] {
				c.Open()
			}
			return false
		}
	}
	return true
}

// OpenAll opens every gate.
func OpenAll(gs ...*Gate) {
	for _, g := range gs {
		g.Open()
	}
}
