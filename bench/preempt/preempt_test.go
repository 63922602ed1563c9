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

	"github.com/uiod/uiod/internal/qemutest"
	"github.com/uiod/uiod/internal/testutil"
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
// preemption is.
func TestPreemptionsFromTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("trace: %v", err)
	}
	ids := make(chan int64)
	go func() {
		for range 5 {
			runtime.Gosched()
		}
		ids <- goid()
	}()
	id := <-ids
	trace.Stop()
	o, err := preemptions(&buf, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.off) < 5 || o.span <= 0 {
		t.Fatalf("%d round trips in a trace of %v, want at least the 5 yields", len(o.off), o.span)
	}
	if s := o.String(); !strings.Contains(s, "preemptions=") {
		t.Fatalf("summary %q", s)
	}
}

// TestPreemptInGuest runs the Go spin loop (locked, as uiod's poll threads are; with every
// thread on the poll CPU; with GOMAXPROCS 1) and the C floor in turn, rounds times, in a
// 2-vCPU TCG guest booted with tsc=reliable as bench/dpdk's is. By hand:
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
	if n != 3*(1+2*4) {
		t.Fatalf("%d PREEMPT lines, want %d:\n%s", n, 3*(1+2*4), r.Output)
	}
}
