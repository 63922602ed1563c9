package dataplane

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// setupThread prepares the calling (locked) OS thread for polling: pinned to cpu when
// cpu ≥ 0, and with a timer slack of 1 ns so that range sleeps and epoll timeouts are not
// stretched by the default 50 µs slack.
func setupThread(cpu int) error {
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set timer slack: %w", err)
	}
	return nil
}

// threadCPUTime is the calling thread's CPU time. It is a real system call (~1 µs): call
// it occasionally, never per poll.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
