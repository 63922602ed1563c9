package vhost

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/benchstat"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// run is one back end's measurement in one round.
type run struct {
	name     string
	round    int
	lat      qemutest.LatencyReport
	probeCPU float64 // back end's process CPU, % of one CPU, while probed
	idleCPU  float64 // the same with the client connected and no traffic
	// beWait and clWait are how long the back end's and the client's threads were
	// runnable but waiting for a CPU over the probes (the machine's load, seen by each).
	beWait, clWait time.Duration
	load           string // /proc/loadavg after the run
}

func (r run) p50us() float64 { return float64(r.lat.MedianNs) / 1e3 }
func (r run) p99us() float64 { return float64(r.lat.P99Ns) / 1e3 }

// report is the whole run: the settings, the machine's load and every back end's rounds.
type report struct {
	started, ended     time.Time
	loadStart, loadEnd string
	rounds, probes     int
	interval, idle     time.Duration
	runs               []run
}

// markdown renders every round, then each back end's median over the rounds with its
// ratio to testpmd's (when testpmd was measured).
func (rep report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s–%s UTC, load average %s at the start, %s at the end; %d rounds, %d probes %v apart, idle stretch %v.\n\n",
		rep.started.Format("2006-01-02 15:04"), rep.ended.Format("15:04"), rep.loadStart, rep.loadEnd,
		rep.rounds, rep.probes, rep.interval, rep.idle)
	b.WriteString("| back end | round | p50 µs | p99 µs | lost | late | CPU probed % | idle CPU % | run-queue wait, back end / client (ms) | load after |\n|---|---|---|---|---|---|---|---|---|---|\n")
	var names []string
	for _, r := range rep.runs {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %d | %d | %.2f | %.3f | %d / %d | %s |\n",
			r.name, r.round, r.p50us(), r.p99us(), r.lat.Lost, r.lat.Late, r.probeCPU, r.idleCPU,
			r.beWait.Milliseconds(), r.clWait.Milliseconds(), r.load)
		if !slices.Contains(names, r.name) {
			names = append(names, r.name)
		}
	}
	type agg struct{ p50, p99, probe, idle float64 }
	meds := map[string]agg{}
	for _, n := range names {
		var p50, p99, probe, idle []float64
		for _, r := range rep.runs {
			if r.name == n {
				p50, p99 = append(p50, r.p50us()), append(p99, r.p99us())
				probe, idle = append(probe, r.probeCPU), append(idle, r.idleCPU)
			}
		}
		meds[n] = agg{benchstat.Median(p50), benchstat.Median(p99), benchstat.Median(probe), benchstat.Median(idle)}
	}
	b.WriteString("\nMedians over the rounds (in brackets: the ratio to testpmd's median):\n\n")
	b.WriteString("| back end | p50 µs | p99 µs | CPU probed % | idle CPU % |\n|---|---|---|---|---|\n")
	base, hasBase := meds["testpmd"]
	ratio := func(x, y float64) string {
		if !hasBase || y == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f×)", x/y)
	}
	for _, n := range names {
		m := meds[n]
		fmt.Fprintf(&b, "| %s | %.1f%s | %.1f%s | %.2f%s | %.3f%s |\n", n,
			m.p50, ratio(m.p50, base.p50), m.p99, ratio(m.p99, base.p99),
			m.probe, ratio(m.probe, base.probe), m.idle, ratio(m.idle, base.idle))
	}
	return b.String()
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := benchstat.Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	lat := func(p50, p99 int64) qemutest.LatencyReport {
		return qemutest.LatencyReport{MedianNs: p50, P99Ns: p99}
	}
	rep := report{rounds: 2, probes: 10, interval: 400 * time.Microsecond, idle: time.Second, loadStart: "1 2 3", loadEnd: "4 5 6",
		runs: []run{
			{name: "testpmd", round: 1, lat: lat(20000, 100000), probeCPU: 90, idleCPU: 100},
			{name: "uiod-adaptive", round: 1, lat: lat(10000, 50000), probeCPU: 9, idleCPU: 0.5},
			{name: "uiod-adaptive", round: 2, lat: lat(30000, 150000), probeCPU: 27, idleCPU: 1.5, beWait: 3 * time.Millisecond, clWait: 250 * time.Millisecond, load: "7.5 7 6"},
			{name: "testpmd", round: 2, lat: lat(40000, 300000), probeCPU: 90, idleCPU: 100},
		}}
	md := rep.markdown()
	testutil.TextContains(t, "report", md,
		"load average 1 2 3 at the start, 4 5 6 at the end; 2 rounds, 10 probes 400µs apart",
		"| uiod-adaptive | 2 | 30.0 | 150.0 | 0 | 0 | 27.00 | 1.500 | 3 / 250 | 7.5 7 6 |",
		"| testpmd | 30.0 (1.00×) | 200.0 (1.00×) | 90.00 (1.00×) | 100.000 (1.00×) |",
		"| uiod-adaptive | 20.0 (0.67×) | 100.0 (0.50×) | 18.00 (0.20×) | 1.000 (0.01×) |",
	)
}
