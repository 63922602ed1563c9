//go:build !linux

package dataplane

import (
	"errors"
	"fmt"
	"time"
)

// setupThread pins nothing: thread affinity is set on Linux only, so asking for a CPU
// fails with an error that wraps errors.ErrUnsupported.
func setupThread(cpu int) error {
	if cpu >= 0 {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, errors.ErrUnsupported)
	}
	return nil
}

// threadCPUTime is 0: per-thread CPU time is read on Linux only.
func threadCPUTime() time.Duration { return 0 }
