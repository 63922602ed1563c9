//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
	"golang.org/x/sys/unix"
)

func TestGaps(t *testing.T) {
	var g gaps
	for _, d := range []time.Duration{time.Microsecond, 20 * time.Microsecond, 21 * time.Microsecond, 200 * time.Microsecond, time.Millisecond} {
		g.add(d)
	}
	want := gaps{over20: 3, over100: 2, over500: 1, total: 1221 * time.Microsecond, max: time.Millisecond}
	if g != want {
		t.Fatalf("gaps %+v, want %+v", g, want)
	}
}

// Every runtime.Gosched is a running → runnable → running round trip in the trace, as a
// preemption is, told apart by its reason; a goroutine that spins 200 ms without one is
// preempted by sysmon (every 10 ms) at least once.
func TestPreemptionsFromTrace(t *testing.T) {
	for _, tc := range []struct {
		name              string
		body              func()
		yields, preempted int // at least
		summary           string
	}{
		{"gosched", func() {
			for range 5 {
				runtime.Gosched()
			}
		}, 5, 0, "yields="},
		{"spin", func() {
			for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
				work(&sink)
			}
		}, 0, 1, "preemptions="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := trace.Start(&buf); err != nil {
				t.Skipf("trace: %v", err)
			}
			ids := make(chan int64)
			go func() {
				tc.body()
				ids <- goid()
			}()
			id := <-ids
			trace.Stop()
			o, err := preemptions(&buf, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.yielded) < tc.yields || len(o.off) < tc.preempted || o.span <= 0 {
				t.Fatalf("%d yields, %d preemptions in a trace of %v, want at least %d and %d", len(o.yielded), len(o.off), o.span, tc.yields, tc.preempted)
			}
			if s := o.String(); !strings.Contains(s, tc.summary) {
				t.Fatalf("summary %q", s)
			}
		})
	}
}

// The spin loop's yields are uiod's: each one is recorded, without allocating.
func TestSpinYields(t *testing.T) {
	cpu := firstCPU(t)
	y, err := newYields(100*time.Millisecond, 10*time.Millisecond, cpu, "away")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = spin(cpu, 100*time.Millisecond, true, 10*time.Millisecond, y)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(y.took); n < 5 || cap(y.took) != 12 {
		t.Fatalf("%d yields recorded (capacity %d) in 100 ms yielding every 10 ms", n, cap(y.took))
	}
	if s := y.String(); !strings.Contains(s, "moved=") {
		t.Fatalf("summary %q", s)
	}
}

func firstCPU(t *testing.T) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for c := range 1024 {
		if set.IsSet(c) {
			return c
		}
	}
	t.Skip("no CPU")
	return -1
}

// TestPreemptInGuest runs the Go spin loop (locked, as uiod's poll threads are; with every
// thread on the poll CPU; with GOMAXPROCS 1; with the dataplane's runtime yield, by
// Gosched or a 1 ns sleep, the old thread released two ways, and untraced) and the C
// floor in turn, three times, in a 2-vCPU TCG guest booted with tsc=reliable as
// bench/dpdk's is. By hand:
//
//	UIOD_PREEMPT_BENCH=1 go test -count=1 -v -run TestPreemptInGuest ./bench/preempt
func TestPreemptInGuest(t *testing.T) {
	if os.Getenv("UIOD_PREEMPT_BENCH") != "1" {
		t.Skip("runs by hand: UIOD_PREEMPT_BENCH=1 (see BENCHMARKS.md)")
	}
	qemutest.Require(t)
	goBin := testutil.GoBuild(t, ".")
	cBin := filepath.Join(t.TempDir(), "cgaps")
	if out, err := exec.Command("gcc", "-O2", "-static", "-o", cBin, "cgaps/gaps.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc (apt-get install gcc): %v\n%s", err, out)
	}
	r := qemutest.Run(t, qemutest.Options{
		CPUs: 2, Memory: "1G", Cmdline: []string{"tsc=reliable"},
		Files:   []qemutest.Entry{qemutest.Binary("preempt", goBin), qemutest.Binary("cgaps", cBin)},
		Timeout: 10 * time.Minute,
		Script: `for i in 1 2 3; do
	cgaps 1 4
	preempt -lock=true
	preempt -lock=true -pinall
	preempt -lock=true -yield 8ms
	preempt -lock=true -yield 8ms -procs 3
	preempt -lock=true -yield 8ms -procs 3 -release proc
	preempt -lock=true -yield 8ms -procs 3 -how sleep
	preempt -lock=true -yield 8ms -procs 3 -trace=false
	GODEBUG=asyncpreemptoff=1 preempt -lock=true
	preempt -lock=false -procs 1 -pinall
done`,
	})
	if r.Exit != 0 {
		t.Fatalf("guest script exit %d:\n%s", r.Exit, r.Output)
	}
	n := 0
	for _, l := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(l, "PREEMPT ") {
			t.Log(l)
			n++
		}
	}
	if n != 3*(1+2*4+3*4+2) {
		t.Fatalf("%d PREEMPT lines, want %d:\n%s", n, 3*(1+2*4+3*4+2), r.Output)
	}
}
