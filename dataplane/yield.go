package dataplane

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
)

// yielder is a loop's runtime yield: the interval its Idler is told to keep (from
// idle.RuntimeYieldEnv), the test hook and the counters. The Idler decides when to yield
// (idle.Idler.SetRuntimeYield: its Empty says so); goYield carries it out.
type yielder struct {
	every  time.Duration // 0 never yields
	locked bool          // run locked the goroutine to its thread (step alone, in tests, never yields)
	hook   func()        // test hook: runs after the re-lock, before the thread check
	n      atomic.Uint64
	ns     atomic.Uint64 // total time of the yields
	moves  atomic.Uint64 // yields after which the goroutine ran on another OS thread
	errs   atomic.Uint64 // failed re-pins or affinity restores after a move
}

// keepYield hands the loop's runtime yield to d, the Idler it is taking, on a locked
// thread: its interval runs from since or d's last rest.
func (l *loop) keepYield(d *idle.Idler, since int64) {
	if l.yield.locked {
		d.SetRuntimeYield(l.yield.every, since)
	}
}

// goYield is the runtime yield the Idler's Empty asked for at an empty poll (which holds
// no frame, so none waits through it). It unlocks the goroutine from its OS thread, lets
// the scheduler run what waits for a P, and locks it again to whatever thread it then
// runs on. Gosched while locked would hand the P over through another thread, as a
// forced preemption does; unlocked, the thread often runs the goroutine again itself.
// Only if the thread changed does it move the old one off the poll CPUs and pin the new
// one (and set its timer slack). It allocates nothing.
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
