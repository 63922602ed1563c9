package dataplane

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uiod/uiod/idle"
	"golang.org/x/sys/unix"
)

// threadSample is what the yield hook saw of the loop's thread after the simulated
// change, on a yield that did not move it.
type threadSample struct {
	mask  unix.CPUSet
	slack int
}

// A busy thread that polls nothing yields to the Go scheduler every idle.RuntimeYieldEvery, and after
// a thread change (simulated: the hook makes the thread look like a fresh one from the
// pool, with the process's affinity, the default timer slack and another thread's id)
// it is pinned again with a 1 ns slack, and the thread it left (here the test's own,
// pinned to the poll CPU) gets the process's affinity without the poll CPU.
func TestYieldRepinsAfterThreadChange(t *testing.T) {
	if procMask.Count() == 0 {
		t.Skip("no process affinity")
	}
	first := -1
	for c := range maxCPU {
		if procMask.IsSet(c) {
			first = c
			break
		}
	}
	for _, tc := range []struct {
		name string
		cpu  int
	}{{"pinned", first}, {"unpinned", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			self := unix.Gettid()
			if tc.cpu >= 0 {
				var one unix.CPUSet
				one.Set(tc.cpu)
				if err := unix.SchedSetaffinity(0, &one); err != nil {
					t.Fatal(err)
				}
				defer unix.SchedSetaffinity(0, &procMask)
			}
			dp, err := New(Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: tc.cpu, Queues: []Queue{{Name: "q", RxPort: &countPort{}}}}}})
			if err != nil {
				t.Fatal(err)
			}
			l := dp.loops[0]
			if l.yield.every != idle.RuntimeYieldEvery {
				t.Fatalf("the yield every %v without %s, want %v", l.yield.every, idle.RuntimeYieldEnv, idle.RuntimeYieldEvery)
			}
			var calls int
			var got atomic.Pointer[threadSample]
			l.yield.hook = func() {
				calls++
				if calls == 1 {
					// A fresh pool thread: unpinned, default slack, another id.
					if err := unix.SchedSetaffinity(0, &procMask); err != nil {
						t.Error(err)
					}
					if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 50000, 0, 0, 0); err != nil {
						t.Error(err)
					}
					l.th.tid = self
					return
				}
				if unix.Gettid() != l.th.tid || got.Load() != nil {
					return // a real change this time: sample the next yield
				}
				var s threadSample
				_ = unix.SchedGetaffinity(0, &s.mask)
				s.slack, _ = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
				got.Store(&s)
			}
			if err := dp.Start(); err != nil {
				t.Fatal(err)
			}
			// Polling without a break for well over 50 ms: several yields.
			waitFor(t, "yields after a thread change", func() bool {
				st := dp.Threads()[0]
				return st.RuntimeYields >= 6 && st.ThreadChanges >= 1 && got.Load() != nil
			})
			dp.Stop()
			st := dp.Threads()[0]
			if st.ThreadErrors != 0 {
				t.Errorf("%d re-pin errors", st.ThreadErrors)
			}
			if st.RuntimeYieldTime <= 0 {
				t.Errorf("yield time %v over %d yields", st.RuntimeYieldTime, st.RuntimeYields)
			}
			if st.Idle.Yields != 0 || st.Idle.Sleeps != 0 {
				t.Errorf("busy thread slept %d times, housekeeping %d", st.Idle.Sleeps, st.Idle.Yields)
			}
			s := got.Load()
			if s.slack != 1 {
				t.Errorf("timer slack after the change %d ns, want 1", s.slack)
			}
			// Unpinned, the loop leaves any thread's affinity as it found it.
			if want := (unix.CPUSet{}); tc.cpu >= 0 {
				want.Set(tc.cpu)
				if s.mask != want {
					t.Errorf("poll thread affinity after the change %v CPUs (poll CPU %v), want the poll CPU alone", s.mask.Count(), s.mask.IsSet(tc.cpu))
				}
			}
			var left unix.CPUSet
			if err := unix.SchedGetaffinity(0, &left); err != nil {
				t.Fatal(err)
			}
			away := procMask
			if away.Clear(tc.cpu); away.Count() == 0 {
				away = procMask
			}
			if tc.cpu >= 0 && left != away {
				t.Errorf("the thread left has %d CPUs (poll CPU %v), want the process's %d without the poll CPU", left.Count(), left.IsSet(tc.cpu), away.Count())
			}
		})
	}
}

// A yield, with or without a thread change, allocates nothing.
func TestYieldAllocatesNothing(t *testing.T) {
	for _, move := range []bool{false, true} {
		l := newCountLoop(t, 0, 32)
		done := make(chan float64)
		go func() {
			runtime.LockOSThread() // ends locked: the thread goes with the goroutine
			if err := l.th.setup(-1); err != nil {
				t.Error(err)
			}
			if move {
				l.yield.hook = func() { l.th.tid = -1 }
			}
			done <- testing.AllocsPerRun(100, l.goYield)
		}()
		if n := <-done; n != 0 {
			t.Errorf("move=%v: a yield allocates %.1f times", move, n)
		}
		// Without the hook a real change may happen too: only the forced ones are sure.
		if got := l.yield.moves.Load(); move && got == 0 {
			t.Errorf("move=%v: no thread change", move)
		}
	}
}

// A malformed idle.RuntimeYieldEnv is refused by New (idle's tests pin the parsing).
func TestYieldEnvRefused(t *testing.T) {
	for _, env := range []string{"-1ms", "soon"} {
		t.Setenv(idle.RuntimeYieldEnv, env)
		_, err := New(Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: []Queue{{Name: "q", RxPort: &countPort{}}}}}})
		if err == nil || !strings.Contains(err.Error(), idle.RuntimeYieldEnv) {
			t.Errorf("%q: New: %v, want an error naming %s", env, err, idle.RuntimeYieldEnv)
		}
	}
}
