package testutil

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	n := 0
	if !WaitFor(time.Second, func() bool { n++; return n >= 3 }) {
		t.Fatal("WaitFor gave up on a condition that becomes true")
	}
	if WaitFor(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("WaitFor reported a condition that never holds")
	}
}

func TestErrorIs(t *testing.T) {
	base := errors.New("base")
	ErrorIs(t, fmt.Errorf("open port0: %w", base), base, "port0")
	ErrorContains(t, errors.New("a b c"), "a", "c")
}

func TestFDs(t *testing.T) {
	if FDs() == 0 {
		t.Fatal("a running test has no open fds")
	}
}
