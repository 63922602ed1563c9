// Package testutil holds the few helpers the project's tests share: a bounded wait for a
// condition, a goroutine/fd leak check, and an error-class assertion. Every wait is bounded;
// nothing here asserts a timing-dependent count.
package testutil

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Eventually polls cond every millisecond until it returns true or timeout passes, then
// fails the test with the formatted message. It returns whether cond became true, for
// callers that want to stop early.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("after %v: "+format, append([]any{timeout}, args...)...)
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitFor is Eventually without failing: it reports whether cond became true within timeout.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// CheckLeaks records the number of goroutines and open file descriptors now and, at the
// end of the test, fails it if either grew (goroutines are given up to two seconds to exit).
func CheckLeaks(t testing.TB) {
	t.Helper()
	g0, fd0 := runtime.NumGoroutine(), FDs()
	t.Cleanup(func() {
		t.Helper()
		if !WaitFor(2*time.Second, func() bool { return runtime.NumGoroutine() <= g0 }) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Errorf("goroutines: %d at start, %d at end\n%s", g0, runtime.NumGoroutine(), buf[:n])
		}
		if fd1 := FDs(); fd0 >= 0 && fd1 > fd0 {
			t.Errorf("open file descriptors: %d at start, %d at end", fd0, fd1)
		}
	})
}

// FDs counts this process's open file descriptors, or returns -1 where /proc is missing.
func FDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// ErrorIs fails the test unless err matches target with errors.Is and, when want is not
// empty, its message contains want (the thing the error must name).
func ErrorIs(t testing.TB, err, target error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", target)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("error %q is not %v", err, target)
	}
	if want != "" && !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
}

// ErrorContains fails the test unless err is non-nil and its message contains each of want.
func ErrorContains(t testing.TB, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one naming %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
}
