//go:build linux

package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/exp/trace"
)

// offCPU summarises the preemptions of one goroutine in an execution trace, apart from
// its own runtime.Gosched calls.
type offCPU struct {
	span  time.Duration   // the trace's length
	off   []time.Duration // per preemption: from running → runnable until running again, sorted
	moved int             // preemptions after which it ran on another thread
	// yielded and yieldMoved are the same for the goroutine's own yields.
	yielded    []time.Duration
	yieldMoved int
}

// yieldReason is the reason the trace gives a running → runnable transition of Gosched.
const yieldReason = "runtime.Gosched"

func (o offCPU) String() string {
	s := "no preemption in " + o.span.Round(time.Millisecond).String()
	if len(o.off) > 0 {
		s = "preemptions=" + summary(o.off, o.span, o.moved)
	}
	if len(o.yielded) > 0 {
		s += " yields=" + summary(o.yielded, o.span, o.yieldMoved)
	}
	return s
}

// summary is the count, rate and off-CPU quantiles of sorted round trips over span.
func summary(off []time.Duration, span time.Duration, moved int) string {
	n := len(off)
	var sum time.Duration
	for _, d := range off {
		sum += d
	}
	q := func(p int) time.Duration { return off[min(n*p/100, n-1)].Round(time.Microsecond) }
	return fmt.Sprintf("%d (%.0f/s) off-cpu p50=%v p90=%v p99=%v max=%v total=%v (%.2f%%) moved=%d",
		n, float64(n)/span.Seconds(), q(50), q(90), q(99), off[n-1].Round(time.Microsecond),
		sum.Round(10*time.Microsecond), 100*sum.Seconds()/span.Seconds(), moved)
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
	var yielding bool
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
			since, from, yielding = ev.Time(), ev.Thread(), st.Reason == yieldReason
		case was == trace.GoRunnable && is == trace.GoRunning && since != 0:
			d, moved := time.Duration(ev.Time()-since), ev.Thread() != from
			if yielding {
				o.yielded = append(o.yielded, d)
				if moved {
					o.yieldMoved++
				}
			} else {
				o.off = append(o.off, d)
				if moved {
					o.moved++
				}
			}
			since = 0
		}
	}
	slices.Sort(o.off)
	slices.Sort(o.yielded)
	o.span = time.Duration(last - first)
	return o, nil
}
