package integration

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// userHZ is the unit of the tick counts in /proc/PID/task/TID/stat (USER_HZ, 100 on x86).
const userHZ = 100

// threadTicks is one thread's CPU ticks (user + system) and context switches (voluntary
// + involuntary).
type threadTicks struct{ ticks, switches uint64 }

// threadSample is the daemon's threads at one point, from the guest's "E2E THREADS NAME
// t=UPTIME tid:ticks:switches ..." line: the guest's uptime in seconds, and the threads by
// tid.
type threadSample struct {
	t       float64
	threads map[int]threadTicks
}

// parseThreads finds the THREADS line of the snapshot name in the guest's output; ok is
// false when there is none or it does not parse.
func parseThreads(out, name string) (s threadSample, ok bool) {
	m := regexp.MustCompile(`(?m)^E2E THREADS ` + regexp.QuoteMeta(name) + ` t=([0-9.]+)((?: \d+:\d+:\d+)*) *$`).FindStringSubmatch(out)
	if m == nil {
		return s, false
	}
	t, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return s, false
	}
	s = threadSample{t: t, threads: map[int]threadTicks{}}
	for _, f := range strings.Fields(m[2]) {
		p := strings.Split(f, ":")
		tid, err1 := strconv.Atoi(p[0])
		ticks, err2 := strconv.ParseUint(p[1], 10, 64)
		sw, err3 := strconv.ParseUint(p[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return s, false
		}
		s.threads[tid] = threadTicks{ticks, sw}
	}
	return s, len(s.threads) > 0
}

// threadUse is one thread's share between two samples: CPU percent of one CPU and
// context switches a second.
type threadUse struct {
	tid      int
	cpu, sws float64
}

// idleUse is what the daemon spent between two samples: the whole process's CPU percent
// and context switches a second, and each thread's that lived through both, the busiest
// first. ok is false when b is not after a.
func idleUse(a, b threadSample) (cpu, sws float64, threads []threadUse, ok bool) {
	dt := b.t - a.t
	if dt <= 0 {
		return 0, 0, nil, false
	}
	for tid, after := range b.threads {
		before, seen := a.threads[tid]
		if !seen {
			before = threadTicks{} // a thread started in between: all it did
		}
		u := threadUse{tid: tid, cpu: 100 * float64(after.ticks-before.ticks) / userHZ / dt, sws: float64(after.switches-before.switches) / dt}
		cpu += u.cpu
		sws += u.sws
		threads = append(threads, u)
	}
	slices.SortFunc(threads, func(x, y threadUse) int {
		if x.cpu != y.cpu {
			if x.cpu > y.cpu {
				return -1
			}
			return 1
		}
		if x.sws != y.sws {
			if x.sws > y.sws {
				return -1
			}
			return 1
		}
		return x.tid - y.tid
	})
	return cpu, sws, threads, true
}

// formatUse prints idleUse's result on one line, the threads that used anything first.
func formatUse(cpu, sws float64, threads []threadUse) string {
	var parts []string
	quiet := 0
	for _, u := range threads {
		if u.cpu == 0 && u.sws < 0.5 {
			quiet++
			continue
		}
		parts = append(parts, fmt.Sprintf("tid %d %.2f%% %.1f sw/s", u.tid, u.cpu, u.sws))
	}
	return fmt.Sprintf("process %.2f%% CPU, %.1f context switches/s over %d threads: %s; %d threads quiet",
		cpu, sws, len(threads), strings.Join(parts, ", "), quiet)
}

// TestParseThreads checks the THREADS line parser and the idle breakdown on lines as the
// guest prints them.
func TestParseThreads(t *testing.T) {
	out := "E2E THREADS vf-idle0 t=100.00 10:5:7 11:100:50 \n" +
		"E2E THREADS vf-idle1 t=102.00 10:6:9 11:100:50 12:2:4 \n" +
		"E2E THREADS bad t=1.0 10:x:1 \n"
	tests := []struct {
		name string
		ok   bool
		n    int
	}{
		{"vf-idle0", true, 2},
		{"vf-idle1", true, 3},
		{"bad", false, 0},
		{"missing", false, 0},
		{"vf-idle", false, 0}, // a prefix of a name is not the name
	}
	for _, tt := range tests {
		s, ok := parseThreads(out, tt.name)
		if ok != tt.ok || len(s.threads) != tt.n {
			t.Errorf("%s: ok %v, %d threads; want %v, %d", tt.name, ok, len(s.threads), tt.ok, tt.n)
		}
	}
	a, _ := parseThreads(out, "vf-idle0")
	b, _ := parseThreads(out, "vf-idle1")
	cpu, sws, threads, ok := idleUse(a, b)
	// 1 + 0 + 2 ticks in 2 s of 100 a second; 2 + 0 + 4 switches.
	if !ok || cpu != 1.5 || sws != 3 || len(threads) != 3 || threads[0].tid != 12 || threads[1].tid != 10 {
		t.Errorf("idleUse = %v %v %+v %v; want 1.5%%, 3/s, tid 12 then 10", cpu, sws, threads, ok)
	}
	if _, _, _, ok := idleUse(b, a); ok {
		t.Error("idleUse of samples in the wrong order is ok")
	}
}
