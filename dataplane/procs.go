package dataplane

import (
	"runtime"
	"sync"
)

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

// procs is the process's account of running polling threads: Start raises GOMAXPROCS
// to ProcsFor of all the threads of every running dataplane, and the Stop of the last
// one puts back what the process had before the first raise. It is the one place uiod
// sizes GOMAXPROCS, so no caller of the dataplane does (docs/design.md, the Go runtime
// section).
var procs struct {
	mu      sync.Mutex
	threads int // polling threads of the running dataplanes
	before  int // GOMAXPROCS before the first raise; 0 if nothing was raised
}

// reserveProcs counts n more running polling threads and raises GOMAXPROCS for them.
func reserveProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.threads += n
	if want := ProcsFor(procs.threads); runtime.GOMAXPROCS(0) < want {
		old := runtime.GOMAXPROCS(want)
		if procs.before == 0 {
			procs.before = old
		}
	}
}

// releaseProcs counts n polling threads gone; when none is left, GOMAXPROCS goes back to
// what it was before the first raise.
func releaseProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.threads -= n
	if procs.threads == 0 && procs.before != 0 {
		runtime.GOMAXPROCS(procs.before)
		procs.before = 0
	}
}
