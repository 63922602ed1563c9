package dataplane

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/clip"
)

// YieldEvery is how long a polling thread (unless YieldEnv turns the yield off) polls
// without giving its CPU away (no sleep, no housekeeping yield: busy mode, or adaptive
// under traffic that never lets it reach its threshold) before it yields to the Go
// scheduler at its next empty poll. The runtime preempts a goroutine that has run 10 ms
// without a scheduling point, and a locked goroutine's preemption hands its P over
// through another thread, which keeps the poll thread off its CPU for hundreds of µs
// under TCG; a voluntary yield a little before that point costs the unlocked round trip
// of runtime.Gosched instead, plus a re-pin whenever the goroutine comes back on another
// thread (see docs/design.md, the idle-policy section, and bench/preempt).
const YieldEvery = 8 * time.Millisecond

// YieldEnv names the environment variable that overrides the runtime yield, for
// measurements: "off" (or 0) never yields, a duration ("4ms") yields after that long;
// unset or "on", after YieldEvery. On is the default: in the TCG guest it cut the
// runtime's forced preemptions from about 48 a second to 1 and the spin loop's gaps over
// 500 µs from 117 to 6 in 4 s (bench/preempt); bench/dpdk's uiod-busy-noyield measures
// uiod-busy without it.
const YieldEnv = "UIOD_RUNTIME_YIELD"

// yieldEvery is the yield interval in force: YieldEvery, or what YieldEnv says (0: off).
func yieldEvery() (time.Duration, error) {
	switch v := os.Getenv(YieldEnv); v {
	case "", "on":
		return YieldEvery, nil
	case "off":
		return 0, nil
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s=%s: want on, off or a duration such as 8ms", YieldEnv, clip.Quote(v))
		}
		return d, nil
	}
}

// yielder is a loop's voluntary-yield schedule and counters.
type yielder struct {
	every  int64  // ns; 0 never yields
	locked bool   // run locked the goroutine to its thread (step alone, in tests, never yields)
	restAt int64  // when the thread last gave its CPU away, or started
	hook   func() // test hook: runs after the re-lock, before the thread check
	n      atomic.Uint64
	ns     atomic.Uint64 // total time of the yields
	moves  atomic.Uint64 // yields after which the goroutine ran on another OS thread
	errs   atomic.Uint64 // failed re-pins or affinity restores after a move
}

// maybeYield runs at an empty poll at now, after the idle policy: it yields to the Go
// scheduler if the thread has polled for YieldEvery since it last gave its CPU away. An
// empty poll holds no frame, so none waits through the yield.
func (l *loop) maybeYield(now int64) {
	y := &l.yield
	if y.every == 0 || !y.locked {
		return
	}
	if r := l.idler.RestEnd(); r > y.restAt {
		y.restAt = r
	}
	if now-y.restAt < y.every {
		return
	}
	l.goYield()
}

// goYield unlocks the goroutine from its OS thread, lets the scheduler run what waits for
// a P, and locks it again to whatever thread it then runs on. Gosched while locked would
// hand the P over through another thread, as a forced preemption does; unlocked, the
// thread often runs the goroutine again itself. Only if the thread changed does it move
// the old one off the poll CPUs and pin the new one (and set its timer slack). It
// allocates nothing.
func (l *loop) goYield() {
	y := &l.yield
	t0 := idle.Now()
	cpu := int64(threadCPUTime())
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	if y.hook != nil {
		y.hook()
	}
	if gettid() != l.th.tid {
		l.changedThread(cpu)
	}
	t1 := idle.Now()
	y.n.Add(1)
	y.ns.Add(uint64(t1 - t0))
	y.restAt = t1
	l.idler.Rested(t1)
}

// changedThread sets up the thread the loop runs on after a yield moved it: the old
// thread is moved off the poll CPUs first (threadState.keepOff), so the two never share
// the poll CPU for long, then the new one is pinned. cpu is the old thread's CPU time at the yield: the
// loop's CPU time carries over.
func (l *loop) changedThread(cpu int64) {
	y := &l.yield
	y.moves.Add(1)
	l.startCPU = int64(threadCPUTime()) - (cpu - l.startCPU)
	if err := l.th.release(l.cpu); err != nil {
		y.errs.Add(1)
	}
	if err := l.th.setup(l.cpu); err != nil {
		y.errs.Add(1)
	}
}
