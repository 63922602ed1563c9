package dpdk

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/benchstat"
)

// report logs every run and, per rate and forwarder, the median over the rounds, with the
// ratios the comparison cares about (reportText).
func report(t *testing.T, runs []run) {
	text := reportText(runs)
	t.Log(text)
	if path := os.Getenv("UIOD_DPDK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// reportText is the report of runs: every run, the medians over rounds per rate and
// forwarder, the ratios of the medians per rate and, with more than one rate, uiod's
// default policy (uiod-auto) against l3fwd-power rate by rate.
func reportText(runs []run) string {
	// A stall is an empty poll of a uiod poll thread that came over 20 µs after its
	// previous turn (idle.Stats.Stalls): how often, and for what share of the probes'
	// time, the thread was kept from polling.
	var b strings.Builder
	fmt.Fprintf(&b, "\n| forwarder | kpps | round | CPU %% probed | CPU %% idle | IRQs probed | IRQs idle | p50 µs | p99 µs | max µs | lost | burst %% | stalls/s | stalled %% |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var kpps []float64
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %d | %d | %.1f | %.1f | %.1f | %d | %.1f | %s |\n", r.name, fmtKpps(r.kpps), r.round,
			r.probeCPU, r.idleCPU, r.probeIRQs, r.idleIRQs, us(r.lat.MedianNs), us(r.lat.P99Ns), us(r.lat.MaxNs),
			r.lat.Sent-r.lat.Received, r.burst, stallCells(r))
		if !slices.Contains(kpps, r.kpps) {
			kpps = append(kpps, r.kpps)
		}
	}
	slices.Sort(kpps)
	meds := make([]map[string]run, len(kpps))
	fmt.Fprintf(&b, "\nmedians over rounds:\n| forwarder | kpps | CPU %% probed | CPU %% idle | p50 µs | p99 µs | burst %% |\n|---|---|---|---|---|---|---|\n")
	for i, k := range kpps {
		meds[i] = medians(runs, k)
		for _, name := range forwarders {
			if m, ok := meds[i][name]; ok {
				fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, fmtKpps(k), m.probeCPU, m.idleCPU, us(m.lat.MedianNs), us(m.lat.P99Ns), m.burst)
			}
		}
	}
	for i, k := range kpps {
		fmt.Fprintf(&b, "\nratios of the medians at %s kpps (same boot):\n%s", fmtKpps(k), ratios(meds[i]))
	}
	if len(kpps) > 1 {
		b.WriteString(sweepTable(kpps, meds))
	}
	return b.String()
}

// medians are, per forwarder, the medians over the rounds of its runs at kpps that
// brought a latency report.
func medians(runs []run, kpps float64) map[string]run {
	med := map[string]run{}
	for _, name := range forwarders {
		var rs []run
		for _, r := range runs {
			if r.name == name && r.kpps == kpps && r.latencyErr == "" {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		m := run{name: name, kpps: kpps}
		m.probeCPU = median(rs, func(r run) float64 { return r.probeCPU })
		m.idleCPU = median(rs, func(r run) float64 { return r.idleCPU })
		m.lat.MedianNs = int64(median(rs, func(r run) float64 { return float64(r.lat.MedianNs) }))
		m.lat.P99Ns = int64(median(rs, func(r run) float64 { return float64(r.lat.P99Ns) }))
		m.burst = median(rs, func(r run) float64 { return r.burst })
		med[name] = m
	}
	return med
}

// Measures of a median run the ratios compare.
var (
	p50      = func(r run) float64 { return float64(r.lat.MedianNs) }
	p99      = func(r run) float64 { return float64(r.lat.P99Ns) }
	probeCPU = func(r run) float64 { return r.probeCPU }
	idleCPU  = func(r run) float64 { return r.idleCPU }
	burstGot = func(r run) float64 { return r.burst }
)

// measureOf is a measure with the name a ratio line gives it.
type measureOf struct {
	what string
	f    func(run) float64
}

// The measures the ratio lines compare, by name.
var (
	mP50      = measureOf{"p50", p50}
	mP99      = measureOf{"p99", p99}
	mProbeCPU = measureOf{"probed CPU", probeCPU}
	mIdleCPU  = measureOf{"idle CPU", idleCPU}
	mBurstGot = measureOf{"burst received", burstGot}
)

// ratio is f(med[a]) / f(med[b]), ok false when either is missing or the divisor zero.
func ratio(med map[string]run, a, b string, f func(run) float64) (float64, bool) {
	x, ok1 := med[a]
	y, ok2 := med[b]
	if !ok1 || !ok2 || f(y) == 0 {
		return 0, false
	}
	return f(x) / f(y), true
}

// ratios are the lines "what a / b: x×" of the comparisons of one rate's medians.
func ratios(med map[string]run) string {
	var out strings.Builder
	lines := func(a, b string, ms ...measureOf) {
		for _, m := range ms {
			if x, ok := ratio(med, a, b, m.f); ok {
				fmt.Fprintf(&out, "%s %s / %s: %.2f×\n", m.what, a, b, x)
			}
		}
	}
	lines("uiod-busy", "testpmd", mP50, mP99, mProbeCPU)
	// The same without the poll thread's runtime yields (idle.RuntimeYieldEnv=off).
	lines("uiod-busy-noyield", "testpmd", mP50, mP99)
	lines("uiod-busy", "uiod-busy-noyield", mP99)
	lines("uiod-adaptive", "l3fwd-power", mIdleCPU, mP50, mP99)
	lines("uiod-auto", "l3fwd-power", mProbeCPU, mP50, mP99)
	// uiod's l3fwd routes the probes as l3fwd-power does (LPM, TTL, checksum, MACs).
	for _, u := range []string{"uiod-l3fwd-adaptive", "uiod-l3fwd-auto"} {
		lines(u, "l3fwd-power", mProbeCPU, mIdleCPU, mP50, mP99)
	}
	lines("uiod-busy", "testpmd", mBurstGot)
	lines("uiod-adaptive", "l3fwd-power", mBurstGot)
	lines("uiod-auto", "l3fwd-power", mBurstGot)
	return out.String()
}

// sweepTable compares uiod's default policy (uiod-auto: adaptive with the estimated
// threshold; uiod-l3fwd-auto, the same routing as l3fwd-power) with l3fwd-power at each
// rate: probed CPU, p50 and p99 as ratios, and whether uiod is worse on both CPU and p99.
func sweepTable(kpps []float64, meds []map[string]run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nthe default policy against l3fwd-power by rate (ratios of the medians):\n| uiod | kpps | probed CPU | p50 | p99 | worse on CPU and p99 |\n|---|---|---|---|---|---|\n")
	for _, u := range []string{"uiod-auto", "uiod-l3fwd-auto"} {
		for i, k := range kpps {
			c, ok1 := ratio(meds[i], u, "l3fwd-power", probeCPU)
			m, ok2 := ratio(meds[i], u, "l3fwd-power", p50)
			n, ok3 := ratio(meds[i], u, "l3fwd-power", p99)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f× | %.2f× | %.2f× | %v |\n", u, fmtKpps(k), c, m, n, c > 1 && n > 1)
		}
	}
	return b.String()
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func median(rs []run, f func(run) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return benchstat.Median(v)
}

// stallCells are the stall columns of r: per second and as a share of the probe window,
// "–" for a forwarder that does not count them.
func stallCells(r run) string {
	if !r.hasStalls || r.probeSecs <= 0 {
		return "– | –"
	}
	return fmt.Sprintf("%.0f | %.2f", r.stalls/r.probeSecs, 100*r.stallSecs/r.probeSecs)
}
