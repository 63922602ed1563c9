package testutil

import (
	"testing"
	"time"
)

// Within runs f on a goroutine and returns its error, or fails the test (t.Fatal) if f
// has not returned after timeout: for a call that must not block, such as an open that
// may meet a FIFO. A call that never returns leaves its goroutine behind.
func Within(t testing.TB, timeout time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatalf("%s blocked for %v", what, timeout)
		return nil
	}
}
