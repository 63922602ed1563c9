package testutil

import (
	"io"
	"testing"
)

// OpenFails fails the test unless open fails with an error that matches target (with
// errors.Is, unless target is nil) and names each of want. Should open succeed, what it
// opened is closed.
func OpenFails[T io.Closer](t testing.TB, open func() (T, error), target error, want ...string) {
	t.Helper()
	c, err := open()
	if err == nil {
		c.Close()
		t.Fatal("open succeeded")
	}
	ErrorIs(t, err, target, "")
	ErrorContains(t, err, want...)
}
