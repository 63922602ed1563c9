//go:build (amd64 || arm64) && !race

package nic

// store writes the counter with a plain store (see Counter): the one writer's, read by
// atomic loads on other goroutines.
func (c *Counter) store(v uint64) { c.v = v }
