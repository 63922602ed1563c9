//go:build linux

package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/exp/trace"
)

// offCPU summarises the preemptions of one goroutine in an execution trace.
type offCPU struct {
	span  time.Duration   // the trace's length
	off   []time.Duration // per preemption: from running → runnable until running again, sorted
	moved int             // preemptions after which it ran on another thread
}

func (o offCPU) String() string {
	n := len(o.off)
	if n == 0 {
		return fmt.Sprintf("no preemption in %v", o.span.Round(time.Millisecond))
	}
	var sum time.Duration
	for _, d := range o.off {
		sum += d
	}
	q := func(p int) time.Duration { return o.off[min(n*p/100, n-1)].Round(time.Microsecond) }
	return fmt.Sprintf("preemptions=%d (%.0f/s) off-cpu p50=%v p90=%v p99=%v max=%v total=%v (%.2f%%) moved=%d",
		n, float64(n)/o.span.Seconds(), q(50), q(90), q(99), o.off[n-1].Round(time.Microsecond),
		sum.Round(10*time.Microsecond), 100*sum.Seconds()/o.span.Seconds(), o.moved)
}

// preemptions reads an execution trace and returns how goroutine g was preempted.
func preemptions(r io.Reader, g int64) (offCPU, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return offCPU{}, err
	}
	var o offCPU
	var first, last, since trace.Time
	var from trace.ThreadID
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return o, err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine || int64(st.Resource.Goroutine()) != g {
			continue
		}
		switch was, is := st.Goroutine(); {
		case was == trace.GoRunning && is == trace.GoRunnable:
			since, from = ev.Time(), ev.Thread()
		case was == trace.GoRunnable && is == trace.GoRunning && since != 0:
			o.off = append(o.off, time.Duration(ev.Time()-since))
			if ev.Thread() != from {
				o.moved++
			}
			since = 0
		}
	}
	slices.Sort(o.off)
	o.span = time.Duration(last - first)
	return o, nil
}
