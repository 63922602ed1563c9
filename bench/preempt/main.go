//go:build linux

// Command preempt measures what the Go runtime takes from a busy-polling goroutine: it
// spins for -d on one CPU, as a uiod poll thread in busy mode does (a call with a stack
// frame per turn, so the runtime's synchronous preemption check runs as it does in the
// dataplane's interface calls), counts the gaps over 20 µs between its clock reads, and,
// from an execution trace of the run, how often the runtime preempted it and how long
// each preemption kept it off its CPU. gaps.c is the same loop in C, the floor the gaps
// compare with. bench/preempt's guest test runs both in a QEMU guest:
//
//	UIOD_PREEMPT_BENCH=1 go test -count=1 -v -run TestPreemptInGuest ./bench/preempt
//
// Every figure is one line starting with "PREEMPT".
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

var sink [64]uint64

// work is one poll's stand-in.
//
//go:noinline
func work(s *[64]uint64) {
	var local [32]uint64
	for i := range local {
		local[i] = s[i] + uint64(i)
	}
	s[0] = local[7]
}

// gaps are the spin loop's stalls: the gaps over 20 µs between two clock reads.
type gaps struct {
	over20, over100, over500 int
	total, max               time.Duration
}

func (g *gaps) add(d time.Duration) {
	if d <= 20*time.Microsecond {
		return
	}
	g.over20++
	g.total += d
	if d > 100*time.Microsecond {
		g.over100++
	}
	if d > 500*time.Microsecond {
		g.over500++
	}
	g.max = max(g.max, d)
}

func (g gaps) String() string {
	return fmt.Sprintf("gaps>20us=%d >100us=%d >500us=%d stalled=%v max=%v", g.over20, g.over100, g.over500,
		g.total.Round(10*time.Microsecond), g.max.Round(time.Microsecond))
}

// spin runs the loop for d on cpu and returns its gaps and its goroutine's trace id. With
// every > 0 (and lock) it yields to the scheduler every that long as uiod's dataplane
// does (yield.go); y are those yields.
func spin(cpu int, d time.Duration, lock bool, every time.Duration, y *yields) (gaps, int64, error) {
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return gaps{}, 0, fmt.Errorf("pin to cpu %d: %w", cpu, err)
	}
	var g gaps
	start := time.Now()
	last, rest := time.Duration(0), time.Duration(0)
	for {
		work(&sink)
		now := time.Since(start)
		if lock && every > 0 && now-rest >= every {
			if err := y.yield(cpu); err != nil {
				return g, 0, err
			}
			now = time.Since(start)
			rest = now // the yield's own gap counts in g too: the total is what compares
		}
		g.add(now - last)
		last = now
		if now > d {
			return g, goid(), nil
		}
	}
}

// goid is the calling goroutine's id, as the execution trace names it.
func goid() int64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	// "goroutine 7 [running]:..."
	var id int64
	if _, err := fmt.Sscanf(string(b), "goroutine %d", &id); err != nil {
		return -1
	}
	return id
}

// pinAll pins every thread of the process to cpu (threads created later inherit it).
func pinAll(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin thread %d: %w", tid, err)
		}
	}
	return nil
}

func main() {
	lock := flag.Bool("lock", true, "lock the spinning goroutine to its OS thread (as uiod's poll threads are)")
	cpu := flag.Int("cpu", 1, "the CPU to spin on")
	d := flag.Duration("d", 4*time.Second, "how long to spin")
	all := flag.Bool("pinall", false, "pin every thread of the process to -cpu, not only the spinning one")
	procs := flag.Int("procs", 0, "GOMAXPROCS (0: the runtime's choice)")
	every := flag.Duration("yield", 0, "with -lock, yield to the scheduler unlocked every this long, as uiod's poll threads do (0: never)")
	release := flag.String("release", "away", "after a yield moved the goroutine, the old thread's affinity: away (the process's without -cpu), proc (the process's) or none (left pinned)")
	how := flag.String("how", "gosched", "how the yield gives the P away: gosched (runtime.Gosched: the global run queue) or sleep (a 1 ns time.Sleep: back through the P's own timer into its runnext, which inherits the time slice, so sysmon still preempts)")
	traced := flag.Bool("trace", true, "trace the run to count the runtime's preemptions (the trace reader is itself a goroutine that competes with the spin)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *all {
		if err := pinAll(*cpu); err != nil {
			fmt.Fprintln(os.Stderr, "preempt:", err)
			os.Exit(1)
		}
	}
	y, err := newYields(*d, *every, *cpu, *release)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preempt:", err)
		os.Exit(2)
	}
	if *how != "gosched" && *how != "sleep" {
		fmt.Fprintf(os.Stderr, "preempt: -how %q: want gosched or sleep\n", *how)
		os.Exit(2)
	}
	y.sleep = *how == "sleep"
	var buf bytes.Buffer
	if *traced {
		if err := trace.Start(&buf); err != nil {
			fmt.Fprintln(os.Stderr, "preempt: trace:", err)
			os.Exit(1)
		}
	}
	g, id, err := spin(*cpu, *d, *lock, *every, y)
	if *traced {
		trace.Stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "preempt:", err)
		os.Exit(1)
	}
	fmt.Printf("PREEMPT go lock=%v procs=%d pinall=%v godebug=%q yield=%v how=%s release=%s trace=%v %v\n", *lock, runtime.GOMAXPROCS(0), *all, os.Getenv("GODEBUG"), *every, *how, *release, *traced, g)
	if *every > 0 {
		fmt.Printf("PREEMPT go yields %v\n", y)
	}
	if !*traced {
		return
	}
	p, err := preemptions(&buf, id)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preempt: trace:", err)
		os.Exit(1)
	}
	fmt.Printf("PREEMPT go trace %v\n", p)
}
