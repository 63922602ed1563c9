package sidebyside

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uiod/uiod/internal/benchstat"
	"github.com/uiod/uiod/testrig/qemutest"
)

// Roles names the two sides of a bench in its log lines and report.
type Roles struct {
	Contender string // what is measured and compared: "switch", "back end"
	Peer      string // the DPDK program on the other side of it: "front end", "client"
	Baseline  string // the contender every other is compared with
	// FineRatios renders a ratio below 0.01 with two significant digits (an idle poll
	// thread against a spinning one) instead of two decimals.
	FineRatios bool
	// Goal, if set, is judged for every contender but the baseline.
	Goal *Goal
}

// Goal is a target of idle CPU and p50 latency, both as ratios to the baseline's.
type Goal struct {
	Text            string // the report's line that introduces the verdicts
	IdleMax, P50Max float64
}

// Run is one contender's measurement in one round.
type Run struct {
	Name     string
	Round    int
	Lat      qemutest.LatencyReport
	ProbeCPU float64 // the contender's process CPU, % of one CPU, while probed
	IdleCPU  float64 // the same with the peer connected and no traffic
	// Wait and PeerWait are how long the contender's and the peer's threads were runnable
	// but waiting for a CPU over the probes (the machine's load, seen by each).
	Wait, PeerWait time.Duration
	Load           string // /proc/loadavg after the run
}

// P50us is the run's median round trip in µs.
func (r Run) P50us() float64 { return float64(r.Lat.MedianNs) / 1e3 }

// P99us is the run's 99th percentile round trip in µs.
func (r Run) P99us() float64 { return float64(r.Lat.P99Ns) / 1e3 }

// Report is the whole run: the settings, the machine's load and every contender's rounds.
type Report struct {
	Roles
	Started, Ended     time.Time
	LoadStart, LoadEnd string
	Rounds, Probes     int
	Interval, Idle     time.Duration
	Runs               []Run
}

// Markdown renders every round, then each contender's median over the rounds with its
// ratio to the baseline's (when the baseline was measured), then the goal's verdicts.
func (rep Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s–%s UTC, load average %s at the start, %s at the end; %d rounds, %d probes %v apart, idle stretch %v.\n\n",
		rep.Started.Format("2006-01-02 15:04"), rep.Ended.Format("15:04"), rep.LoadStart, rep.LoadEnd,
		rep.Rounds, rep.Probes, rep.Interval, rep.Idle)
	fmt.Fprintf(&b, "| %s | round | p50 µs | p99 µs | lost | late | CPU probed %% | idle CPU %% | run-queue wait, %s / %s (ms) | load after |\n|---|---|---|---|---|---|---|---|---|---|\n",
		rep.Contender, rep.Contender, rep.Peer)
	var names []string
	for _, r := range rep.Runs {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %d | %d | %.2f | %.3f | %d / %d | %s |\n",
			r.Name, r.Round, r.P50us(), r.P99us(), r.Lat.Lost, r.Lat.Late, r.ProbeCPU, r.IdleCPU,
			r.Wait.Milliseconds(), r.PeerWait.Milliseconds(), r.Load)
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	type agg struct{ p50, p99, probe, idle float64 }
	meds := map[string]agg{}
	for _, n := range names {
		var p50, p99, probe, idle []float64
		for _, r := range rep.Runs {
			if r.Name == n {
				p50, p99 = append(p50, r.P50us()), append(p99, r.P99us())
				probe, idle = append(probe, r.ProbeCPU), append(idle, r.IdleCPU)
			}
		}
		meds[n] = agg{benchstat.Median(p50), benchstat.Median(p99), benchstat.Median(probe), benchstat.Median(idle)}
	}
	fmt.Fprintf(&b, "\nMedians over the rounds (in brackets: the ratio to %s's median):\n\n", rep.Baseline)
	fmt.Fprintf(&b, "| %s | p50 µs | p99 µs | CPU probed %% | idle CPU %% |\n|---|---|---|---|---|\n", rep.Contender)
	base, hasBase := meds[rep.Baseline]
	ratio := func(x, y float64) string {
		if !hasBase || y == 0 {
			return ""
		}
		if rep.FineRatios {
			return " (" + Times(x/y) + ")"
		}
		return fmt.Sprintf(" (%.2f×)", x/y)
	}
	for _, n := range names {
		m := meds[n]
		fmt.Fprintf(&b, "| %s | %.1f%s | %.1f%s | %.2f%s | %.3f%s |\n", n,
			m.p50, ratio(m.p50, base.p50), m.p99, ratio(m.p99, base.p99),
			m.probe, ratio(m.probe, base.probe), m.idle, ratio(m.idle, base.idle))
	}
	if g := rep.Goal; g != nil && hasBase && base.p50 > 0 && base.idle > 0 {
		b.WriteString("\n" + g.Text + "\n\n")
		for _, n := range names {
			if n == rep.Baseline {
				continue
			}
			m := meds[n]
			ri, rp := m.idle/base.idle, m.p50/base.p50
			fmt.Fprintf(&b, "- %s: idle %s (%s), p50 %s (%s)\n", n, Times(ri), met(ri <= g.IdleMax), Times(rp), met(rp <= g.P50Max))
		}
	}
	return b.String()
}

// Times renders a ratio with two decimals, or with two significant digits below 0.01 (an
// idle poll thread against a spinning one).
func Times(r float64) string {
	if r != 0 && r < 0.01 {
		return fmt.Sprintf("%.2g×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
