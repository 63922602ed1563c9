package nic

import "sync/atomic"

// Counter is a statistic with one writer, the goroutine that owns the queue it counts
// for, and readers on any goroutine: Add is a plain load and store of an atomic word, so
// the hot path executes no locked instruction (the dataplane's own counters follow the
// same rule). Two goroutines must never Add to one Counter at the same time.
type Counter struct{ v atomic.Uint64 }

// Add adds n. Only the counter's writer calls it.
func (c *Counter) Add(n uint64) { c.v.Store(c.v.Load() + n) }

// Load returns the count.
func (c *Counter) Load() uint64 { return c.v.Load() }
