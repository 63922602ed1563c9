package nic

import "sync/atomic"

// Counter is a statistic with one writer, the goroutine that owns the queue it counts
// for, and readers on any goroutine. Add is a load and a store of the word, never a
// read-modify-write, and on amd64 and arm64 the store is a plain one (counter_plain.go):
// Go compiles sync/atomic's store to XCHG on amd64, which is a locked instruction, and
// the hot path executes none. An aligned 8-byte store is single-copy atomic on both, so
// a reader's atomic load sees the count before or after it, never half of it; what it
// gives up is the ordering with the writer's other stores, which a statistic does not
// need. Two goroutines must never Add to one Counter at the same time.
type Counter struct {
	_ [0]atomic.Uint64 // 8-byte aligned, as 64-bit atomics need on 32-bit platforms
	v uint64
}

// Add adds n. Only the counter's writer calls it.
func (c *Counter) Add(n uint64) { c.store(atomic.LoadUint64(&c.v) + n) }

// Load returns the count.
func (c *Counter) Load() uint64 { return atomic.LoadUint64(&c.v) }
