//go:build !linux

package dataplane

import (
	"errors"
	"fmt"
	"time"
)

// threadState is what a polling loop knows of its OS thread: nothing off Linux.
type threadState struct {
	tid int
}

// setup pins nothing: thread affinity is set on Linux only, so asking for a CPU fails
// with an error that wraps errors.ErrUnsupported.
func (t *threadState) setup(cpu int) error {
	if cpu >= 0 {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, errors.ErrUnsupported)
	}
	return nil
}

// keepOff has nothing to keep off: no thread is pinned.
func (t *threadState) keepOff(pollCPUs []int) {}

// release has nothing to restore: no thread was pinned.
func (t *threadState) release(cpu int) error { return nil }

// gettid is 0: thread ids are read on Linux only, so no yield looks like a thread change.
var gettid = func() int { return 0 }

// threadCPUTime is 0: per-thread CPU time is read on Linux only.
func threadCPUTime() time.Duration { return 0 }
