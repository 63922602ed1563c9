package latency

import "golang.org/x/sys/unix"

// setTimerSlack sets the calling thread's timer slack to ns nanoseconds and returns the
// previous slack, or 0 (and changes nothing) if it cannot be read.
func setTimerSlack(ns int) (old int) {
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0
	}
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0)
	return old
}

// nanosleep sleeps ns nanoseconds with nanosleep(2); a signal (EINTR) ends it early.
func nanosleep(ns int64) {
	ts := unix.NsecToTimespec(ns)
	_ = unix.Nanosleep(&ts, nil)
}
