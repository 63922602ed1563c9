package dataplane

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// procMask is the process's CPU affinity as it started, read while package
// initialisation still holds the main thread. Zero if it could not be read.
var procMask unix.CPUSet

func init() { _ = unix.SchedGetaffinity(0, &procMask) }

// threadState is what a polling loop knows of the OS thread it is locked to.
type threadState struct {
	tid  int         // the thread's id (gettid), to tell a thread change after a yield
	away unix.CPUSet // the affinity a thread the loop left gets (release)
}

// keepOff sets the affinity release gives a thread the loop left: the process's, without
// the dataplane's poll CPUs (all of it if that leaves none), so that the thread, and the
// goroutines the runtime runs on it next, leave the poll CPU at once instead of sharing
// it with the poll thread until the kernel balances them apart.
func (t *threadState) keepOff(pollCPUs []int) {
	t.away = procMask
	for _, c := range pollCPUs {
		if c >= 0 {
			t.away.Clear(c)
		}
	}
	if t.away.Count() == 0 {
		t.away = procMask
	}
}

// setup prepares the calling (locked) OS thread for polling: pinned to cpu when cpu ≥ 0,
// and with a timer slack of 1 ns so that range sleeps and epoll timeouts are not
// stretched by the default 50 µs slack. It remembers the thread's id.
func (t *threadState) setup(cpu int) error {
	t.tid = gettid()
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

// release gives the thread t was set up on, which the loop has left for the scheduler's
// pool, the affinity keepOff chose when the loop had pinned it (cpu ≥ 0), so the goroutines the runtime runs
// on it next are neither confined to nor left on the poll CPU. Its 1 ns timer slack
// stays (prctl sets the caller's only): it makes that thread's timers exact, nothing
// worse.
func (t *threadState) release(cpu int) error {
	if cpu < 0 || t.away.Count() == 0 {
		return nil
	}
	if err := unix.SchedSetaffinity(t.tid, &t.away); err != nil {
		return fmt.Errorf("restore affinity of thread %d: %w", t.tid, err)
	}
	return nil
}

// gettid is the calling thread's id (a system call, well under a µs native). A variable,
// so that a test can make a yield look like a thread change.
var gettid = unix.Gettid

// threadCPUTime is the calling thread's CPU time. It is a real system call (~1 µs): call
// it occasionally, never per poll.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
