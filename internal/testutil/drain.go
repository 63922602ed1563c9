package testutil

import "testing"

// Drainer is an interrupt vector as the tests see it (irq.Vector).
type Drainer interface {
	Drain() (uint64, error)
}

// Drain returns how many interrupts v signalled since the last Drain, failing the test
// now if the read fails.
func Drain(t testing.TB, v Drainer) uint64 {
	t.Helper()
	n, err := v.Drain()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
