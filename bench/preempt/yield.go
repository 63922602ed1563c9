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
// and the cost of the two halves of a move's re-pin.
type yields struct {
	took    []time.Duration
	moved   int
	release time.Duration // total time giving the old threads their affinity back
	repin   time.Duration // total time pinning the new threads
	tid     int
	away    *unix.CPUSet // the affinity a thread left gets; nil leaves it pinned
	sleep   bool         // yield by a 1 ns time.Sleep instead of Gosched (-how sleep)
}

// newYields sizes the record for a spin of d yielding every every, so a yield does not
// allocate. release is -release: what a thread the spin left gets.
func newYields(d, every time.Duration, cpu int, release string) (*yields, error) {
	y := &yields{tid: unix.Gettid()}
	var proc unix.CPUSet
	if err := unix.SchedGetaffinity(0, &proc); err != nil {
		return nil, err
	}
	switch release {
	case "none":
	case "proc":
		y.away = &proc
	case "away":
		away := proc
		if away.Clear(cpu); away.Count() == 0 {
			away = proc
		}
		y.away = &away
	default:
		return nil, fmt.Errorf("-release %q: want away, proc or none", release)
	}
	if every > 0 {
		y.took = make([]time.Duration, 0, int(d/every)+2)
	}
	return y, nil
}

// yield is uiod's dataplane yield (dataplane/yield.go): unlock, Gosched, re-lock, and
// only if the thread changed release the old one and pin the new one to cpu.
func (y *yields) yield(cpu int) error {
	t0 := time.Now()
	runtime.UnlockOSThread()
	if y.sleep {
		time.Sleep(time.Nanosecond)
	} else {
		runtime.Gosched()
	}
	runtime.LockOSThread()
	if tid := unix.Gettid(); tid != y.tid {
		r := time.Now()
		if y.away != nil {
			_ = unix.SchedSetaffinity(y.tid, y.away)
		}
		p := time.Now()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("re-pin to cpu %d: %w", cpu, err)
		}
		y.release += p.Sub(r)
		y.repin += time.Since(p)
		y.tid = tid
		y.moved++
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
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Nanosecond) }
	return fmt.Sprintf("n=%d took p50=%v p99=%v max=%v moved=%d release=%v repin=%v", n, q(50), q(99), r(s[n-1]), y.moved, r(y.release), r(y.repin))
}
