//go:build linux

package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// yields are the spin loop's voluntary yields: each one's length (from before the unlock
// to after the re-lock and any re-pin), how many moved the goroutine to another thread,
// and the cost of the re-pins.
type yields struct {
	took  []time.Duration
	moved int
	repin time.Duration // total time of the re-pins after a move
	tid   int
	away  unix.CPUSet // the process's affinity without the spin CPU, which a thread left gets
}

// newYields sizes the record for a spin of d yielding every every, so a yield does not
// allocate.
func newYields(d, every time.Duration, cpu int) *yields {
	y := &yields{tid: unix.Gettid()}
	_ = unix.SchedGetaffinity(0, &y.away)
	if y.away.Clear(cpu); y.away.Count() == 0 {
		_ = unix.SchedGetaffinity(0, &y.away)
	}
	if every > 0 {
		y.took = make([]time.Duration, 0, int(d/every)+2)
	}
	return y
}

// yield is uiod's dataplane yield (dataplane/yield.go): unlock, Gosched, re-lock, and
// only if the thread changed move the old one off cpu and pin the new one to it.
func (y *yields) yield(cpu int) error {
	t0 := time.Now()
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	if tid := unix.Gettid(); tid != y.tid {
		r := time.Now()
		_ = unix.SchedSetaffinity(y.tid, &y.away)
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("re-pin to cpu %d: %w", cpu, err)
		}
		y.tid = tid
		y.moved++
		y.repin += time.Since(r)
	}
	y.took = append(y.took, time.Since(t0))
	return nil
}

func (y *yields) String() string {
	n := len(y.took)
	if n == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(y.took))
	q := func(p int) time.Duration { return s[min(n*p/100, n-1)].Round(100 * time.Nanosecond) }
	return fmt.Sprintf("n=%d took p50=%v p99=%v max=%v moved=%d repin=%v", n, q(50), q(99), s[n-1].Round(100*time.Nanosecond), y.moved, y.repin.Round(100*time.Nanosecond))
}
