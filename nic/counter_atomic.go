//go:build !(amd64 || arm64) || race

package nic

import "sync/atomic"

// store writes the counter atomically: where an 8-byte store may tear (32-bit
// platforms), and under the race detector, which would report the plain store.
func (c *Counter) store(v uint64) { atomic.StoreUint64(&c.v, v) }
