package dataplane

import "runtime"

// SpareProcs is how many Ps ProcsFor leaves for everything that is not a polling thread:
// the garbage collector's workers, timers, the metrics server and threaded-delivery
// helpers.
const SpareProcs = 2

// ProcsFor returns the GOMAXPROCS a process running pollThreads locked polling threads
// should use: a busy poller and a raw sleeper (irq.WaitRaw) each hold a P all the time, so the
// rest of the process needs SpareProcs more. It is never less than runtime.NumCPU().
func ProcsFor(pollThreads int) int {
	n := pollThreads + SpareProcs
	if c := runtime.NumCPU(); c > n {
		n = c
	}
	return n
}
