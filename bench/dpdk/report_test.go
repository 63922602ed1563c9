package dpdk

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/benchstat"
)

// report logs every run and, per forwarder, the median over the rounds, with the ratios
// the comparison cares about.
func report(t *testing.T, runs []run) {
	// A stall is an empty poll of a uiod poll thread that came over 20 µs after its
	// previous turn (idle.Stats.Stalls): how often, and for what share of the probes'
	// time, the thread was kept from polling.
	var b strings.Builder
	fmt.Fprintf(&b, "\n| forwarder | round | CPU %% probed | CPU %% idle | IRQs probed | IRQs idle | p50 µs | p99 µs | max µs | lost | burst %% | stalls/s | stalled %% |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %d | %d | %.1f | %.1f | %.1f | %d | %.1f | %s |\n", r.name, r.round,
			r.probeCPU, r.idleCPU, r.probeIRQs, r.idleIRQs, us(r.lat.MedianNs), us(r.lat.P99Ns), us(r.lat.MaxNs),
			r.lat.Sent-r.lat.Received, r.burst, stallCells(r))
	}
	med := map[string]run{}
	for _, name := range forwarders {
		var rs []run
		for _, r := range runs {
			if r.name == name && r.latencyErr == "" {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		m := run{name: name}
		m.probeCPU = median(rs, func(r run) float64 { return r.probeCPU })
		m.idleCPU = median(rs, func(r run) float64 { return r.idleCPU })
		m.lat.MedianNs = int64(median(rs, func(r run) float64 { return float64(r.lat.MedianNs) }))
		m.lat.P99Ns = int64(median(rs, func(r run) float64 { return float64(r.lat.P99Ns) }))
		m.burst = median(rs, func(r run) float64 { return r.burst })
		med[name] = m
	}
	fmt.Fprintf(&b, "\nmedians over rounds:\n| forwarder | CPU %% probed | CPU %% idle | p50 µs | p99 µs | burst %% |\n|---|---|---|---|---|---|\n")
	for _, name := range forwarders {
		if m, ok := med[name]; ok {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, m.probeCPU, m.idleCPU, us(m.lat.MedianNs), us(m.lat.P99Ns), m.burst)
		}
	}
	var ratios strings.Builder
	ratio := func(what string, a, b string, f func(run) float64) {
		x, ok1 := med[a]
		y, ok2 := med[b]
		if ok1 && ok2 && f(y) != 0 {
			fmt.Fprintf(&ratios, "%s %s / %s: %.2f×\n", what, a, b, f(x)/f(y))
		}
	}
	p50 := func(r run) float64 { return float64(r.lat.MedianNs) }
	p99 := func(r run) float64 { return float64(r.lat.P99Ns) }
	ratio("p50", "uiod-busy", "testpmd", p50)
	ratio("p99", "uiod-busy", "testpmd", p99)
	ratio("probed CPU", "uiod-busy", "testpmd", func(r run) float64 { return r.probeCPU })
	ratio("idle CPU", "uiod-adaptive", "l3fwd-power", func(r run) float64 { return r.idleCPU })
	ratio("p50", "uiod-adaptive", "l3fwd-power", p50)
	ratio("p99", "uiod-adaptive", "l3fwd-power", p99)
	ratio("probed CPU", "uiod-auto", "l3fwd-power", func(r run) float64 { return r.probeCPU })
	ratio("p50", "uiod-auto", "l3fwd-power", p50)
	ratio("p99", "uiod-auto", "l3fwd-power", p99)
	// uiod's l3fwd routes the probes as l3fwd-power does (LPM, TTL, checksum, MACs).
	for _, u := range []string{"uiod-l3fwd-adaptive", "uiod-l3fwd-auto"} {
		ratio("probed CPU", u, "l3fwd-power", func(r run) float64 { return r.probeCPU })
		ratio("idle CPU", u, "l3fwd-power", func(r run) float64 { return r.idleCPU })
		ratio("p50", u, "l3fwd-power", p50)
		ratio("p99", u, "l3fwd-power", p99)
	}
	burstGot := func(r run) float64 { return r.burst }
	ratio("burst received", "uiod-busy", "testpmd", burstGot)
	ratio("burst received", "uiod-adaptive", "l3fwd-power", burstGot)
	ratio("burst received", "uiod-auto", "l3fwd-power", burstGot)
	fmt.Fprintf(&b, "\nratios of the medians (same boot):\n%s", ratios.String())
	t.Log(b.String())
	if path := os.Getenv("UIOD_DPDK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
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
