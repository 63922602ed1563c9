package idle

import "golang.org/x/sys/unix"

// sleepHoldingP sleeps ns without giving the goroutine's P away (a raw nanosleep),
// resuming after signals with the time left.
func sleepHoldingP(ns int64) {
	ts := unix.NsecToTimespec(ns)
	var rem unix.Timespec
	for nanosleepRaw(&ts, &rem) == unix.EINTR {
		ts = rem
	}
}

// sleepReleasingP sleeps about ns through the ordinary nanosleep, which lets the runtime
// hand the thread's P to other goroutines meanwhile. An early return (EINTR) is fine.
func sleepReleasingP(ns int64) {
	ts := unix.NsecToTimespec(ns)
	unix.Nanosleep(&ts, nil)
}
