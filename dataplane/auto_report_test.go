package dataplane

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/uiod/uiod/internal/benchstat"
)

// The report of BenchmarkAutoThreshold: auto's targets as ratios of pooled cells, their
// bootstrap intervals, and the table.

// autoMeasure is what the targets are computed from: percentiles and CPU shares of
// pooled cells, exact or from a bootstrap resample.
type autoMeasure struct {
	ran func(pi int) bool
	pct func(pi, j, p int, clean bool) float64
	cpu func(pi, j int) float64
}

func exactMeasure(cells [][]autoCell) autoMeasure {
	return autoMeasure{
		ran: func(pi int) bool { return cells[pi][0].wall > 0 },
		pct: func(pi, j, p int, clean bool) float64 {
			if clean {
				return float64(pctOf(cells[pi][j].clean, p))
			}
			return float64(pctOf(cells[pi][j].lat, p))
		},
		cpu: func(pi, j int) float64 { return cells[pi][j].cpuPct() },
	}
}

// autoCheck is one of auto's targets as a ratio.
type autoCheck struct {
	what   string
	metric string
	ratio  float64
	limit  float64
}

func (c autoCheck) ok() bool { return c.ratio <= c.limit }

// autoChecks computes the targets; latency targets come twice, on all frames and on the
// clean ones.
func autoChecks(m autoMeasure) []autoCheck {
	const busy, fixed, auto, zero = 0, 1, 2, 3
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	var cs []autoCheck
	lat := func(pi int, what, metric string, j, base, p int, limit float64) {
		cs = append(cs,
			autoCheck{what, metric, ratio(m.pct(pi, j, p, false), m.pct(pi, base, p, false)), limit},
			autoCheck{what + ", clean", metric + "-clean", ratio(m.pct(pi, j, p, true), m.pct(pi, base, p, true)), limit})
	}
	for pi, pat := range autoPatterns {
		if !m.ran(pi) {
			continue // not run (-auto.only)
		}
		switch pat.name {
		case "2.5kpps":
			// Relative to the same run: sleeping at the first empty poll (threshold 0)
			// is the interrupt-only floor of CPU, fixed 300 µs the latency to keep.
			cs = append(cs, autoCheck{"2.5kpps: auto/threshold-0 CPU (≤ 1.3)", "2.5k-cpu-auto/zero", ratio(m.cpu(pi, auto), m.cpu(pi, zero)), 1.3})
			lat(pi, "2.5kpps: auto/fixed p50 (≤ 1)", "2.5k-p50-auto/fixed", auto, fixed, 50, 1)
			lat(pi, "2.5kpps: auto/threshold-0 p99 (≤ 1)", "2.5k-p99-auto/zero", auto, zero, 99, 1)
			cs = append(cs, autoCheck{"2.5kpps: auto CPU % (none)", "2.5k-auto-cpu%", m.cpu(pi, auto), math.Inf(1)})
			lat(pi, "2.5kpps: auto/fixed p99 (none)", "2.5k-p99-auto/fixed", auto, fixed, 99, math.Inf(1))
		case "50kpps":
			lat(pi, "50kpps: auto/busy p99 (≤ 1.2)", "50k-p99-auto/busy", auto, busy, 99, 1.2)
			lat(pi, "50kpps: fixed/busy p99 (none)", "50k-p99-fixed/busy", fixed, busy, 99, math.Inf(1))
		default:
			short := strings.TrimSuffix(pat.name, "-10kpps")
			cs = append(cs, autoCheck{pat.name + ": auto/fixed CPU (< 1)", short + "-cpu-auto/fixed", ratio(m.cpu(pi, auto), m.cpu(pi, fixed)), 0.999})
			lat(pi, pat.name+": auto/fixed p99 (≤ 1.3)", short+"-p99-auto/fixed", auto, fixed, 99, 1.3)
		}
	}
	return cs
}

// bootstrapChecks returns the 5th and 95th percentiles of every check's ratio over n
// paired bootstrap resamples of the rounds.
func bootstrapChecks(perRound [][][]autoCell, n int, rng *rand.Rand) (lo, hi []float64) {
	var samples [][]float64
	pooled := newAutoCells()
	pick := make([]int, len(perRound))
	for range n {
		for pi := range pooled {
			for j := range pooled[pi] {
				pooled[pi][j] = autoCell{}
			}
		}
		benchstat.Resample(rng, pick)
		for _, r := range pick {
			cells := perRound[r]
			for pi := range cells {
				for j := range cells[pi] {
					p, o := &pooled[pi][j], &cells[pi][j]
					p.hist.Merge(&o.hist)
					p.chist.Merge(&o.chist)
					p.cpu += o.cpu
					p.wall += o.wall
				}
			}
		}
		m := autoMeasure{
			ran: func(pi int) bool { return pooled[pi][0].wall > 0 },
			pct: func(pi, j, p int, clean bool) float64 {
				if clean {
					return pooled[pi][j].chist.Quantile(p)
				}
				return pooled[pi][j].hist.Quantile(p)
			},
			cpu: func(pi, j int) float64 { return pooled[pi][j].cpuPct() },
		}
		cs := autoChecks(m)
		if samples == nil {
			samples = make([][]float64, len(cs))
		}
		for i, c := range cs {
			samples[i] = append(samples[i], c.ratio)
		}
	}
	for _, s := range samples {
		l, h := benchstat.Interval(s)
		lo, hi = append(lo, l), append(hi, h)
	}
	return lo, hi
}

// autoTable formats the pooled cells and the target checks.
func autoTable(cells [][]autoCell, rounds int, checks []autoCheck, lo, hi []float64) string {
	var s strings.Builder
	fmt.Fprintf(&s, "auto threshold, %d interleaved rounds pooled; latency = frame injected → handed to TX on the poll thread\n", rounds)
	fmt.Fprintf(&s, "%-15s %-12s %6s %6s %6s %9s %9s %9s %9s %6s %9s %9s %9s %6s %9s %9s\n", "pattern", "policy", "cpu%", "awake%", "steal%",
		"p50", "p99", "max", "clean p99", "clean%", "irqwakes", "predicted", "frames", "lost", "threshold", "wakecost")
	for pi, pat := range autoPatterns {
		for j, pol := range autoPolicies {
			c := &cells[pi][j]
			if c.wall == 0 {
				continue
			}
			max := time.Duration(0)
			if len(c.lat) > 0 {
				max = time.Duration(c.lat[len(c.lat)-1])
			}
			cleanPct := 0.0
			if len(c.lat) > 0 {
				cleanPct = 100 * float64(len(c.clean)) / float64(len(c.lat))
			}
			fmt.Fprintf(&s, "%-15s %-12s %6.2f %6.2f %6.2f %9s %9s %9s %9s %6.2f %9d %9s %9d %6d %9s %9s\n", pat.name, pol.name,
				c.cpuPct(), 100-c.pctWall(c.asleep), c.pctWall(c.steal),
				roundDur(pctOf(c.lat, 50)), roundDur(pctOf(c.lat, 99)), roundDur(max), roundDur(pctOf(c.clean, 99)), cleanPct,
				c.irqWakes, fmt.Sprintf("%d/%d", c.hits, c.predicted), len(c.lat), c.lost, roundDur(c.threshold), roundDur(c.wakeCost))
		}
	}
	fmt.Fprintf(&s, "targets (ratio of pooled rounds, [90 %% bootstrap interval]):\n")
	for i, c := range checks {
		v := "ok"
		switch {
		case !c.ok() && lo[i] > c.limit:
			v = "MISSED"
		case !c.ok():
			v = "MISSED (interval straddles the limit)"
		case hi[i] > c.limit:
			v = "ok (interval straddles the limit)"
		}
		fmt.Fprintf(&s, "  %-44s %7.3f [%5.3f, %5.3f]  %s\n", c.what, c.ratio, lo[i], hi[i], v)
	}
	return s.String()
}

// roundDur keeps three significant digits.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}
