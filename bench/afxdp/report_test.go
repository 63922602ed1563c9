package afxdp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/benchstat"
)

// summary is one forwarder's figures over the rounds: the median of each.
type summary struct {
	name               string
	p50, p99           float64 // µs
	probedCPU, idleCPU float64 // % of one core, -1 for the kernel
	back, sent         int
}

// summarize groups results by forwarder, in first-seen order.
func summarize(all []result, probes int) []summary {
	var names []string
	for _, r := range all {
		if !slices.Contains(names, r.name) {
			names = append(names, r.name)
		}
	}
	var out []summary
	for _, n := range names {
		s := summary{name: n}
		var p50, p99, pc, ic []float64
		for _, r := range all {
			if r.name != n {
				continue
			}
			p50 = append(p50, us(r.r.quantile(0.5)))
			p99 = append(p99, us(r.r.quantile(0.99)))
			pc = append(pc, r.probedCPU)
			ic = append(ic, r.idleCPU)
			s.back += len(r.r.samples)
			s.sent += probes
		}
		s.p50, s.p99, s.probedCPU, s.idleCPU = benchstat.Median(p50), benchstat.Median(p99), benchstat.Median(pc), benchstat.Median(ic)
		out = append(out, s)
	}
	return out
}

// ratio formats a/b (two decimals, four below 0.1, so that an idle ratio of 0.001 does
// not print as zero), or "—" when either is unknown or b is 0.
func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "—"
	}
	if r := a / b; r < 0.1 {
		return fmt.Sprintf("%.4f×", r)
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func cpuCell(v float64, prec int) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// report is the run's Markdown table: per forwarder the medians over the rounds and the
// ratios to testpmd (DPDK net_af_xdp) and to the kernel.
func report(all []result, par params, started time.Time, load0, load1 string) string {
	ss := summarize(all, par.probes)
	ref := func(name string) summary {
		i := slices.IndexFunc(ss, func(s summary) bool { return s.name == name })
		if i < 0 {
			return summary{p50: -1, p99: -1, probedCPU: -1, idleCPU: -1}
		}
		return ss[i]
	}
	dpdk, kern := ref("testpmd"), ref("kernel")
	var b strings.Builder
	fmt.Fprintf(&b, "Started %s, %d round(s) of %d ICMP echo probes %v apart per forwarder, idle %v; load %s → %s\n\n",
		started.Format(time.RFC3339), par.rounds, par.probes, par.gap, par.idle, load0, load1)
	b.WriteString("| forwarder | back | p50 µs | p99 µs | CPU probed % | CPU idle % | p50 / testpmd | p99 / testpmd | idle CPU / testpmd | probed CPU / testpmd | p50 / kernel |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		fmt.Fprintf(&b, "| %s | %d/%d | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s |\n",
			s.name, s.back, s.sent, s.p50, s.p99, cpuCell(s.probedCPU, 1), cpuCell(s.idleCPU, 2),
			ratio(s.p50, dpdk.p50), ratio(s.p99, dpdk.p99), ratio(s.idleCPU, dpdk.idleCPU), ratio(s.probedCPU, dpdk.probedCPU), ratio(s.p50, kern.p50))
	}
	return b.String()
}

func TestReport(t *testing.T) {
	mk := func(name string, round int, ms []int, lost int, pc, ic float64) result {
		r := result{name: name, round: round, probedCPU: pc, idleCPU: ic}
		for _, m := range ms {
			r.r.samples = append(r.r.samples, time.Duration(m)*time.Microsecond)
		}
		r.r.lost = lost
		return r
	}
	all := []result{
		mk("testpmd", 1, []int{40, 50, 60}, 0, 100, 100),
		mk("uiod-adaptive", 1, []int{45, 55, 70}, 0, 20, 1),
		mk("kernel", 1, []int{20, 25, 30}, 0, -1, -1),
	}
	md := report(all, params{rounds: 1, probes: 3, gap: time.Millisecond, idle: time.Second}, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), "1", "2")
	for _, want := range []string{
		"| testpmd | 3/3 | 50.0 | 60.0 | 100.0 | 100.00 | 1.00× | 1.00× | 1.00× | 1.00× | 2.00× |",
		"| uiod-adaptive | 3/3 | 55.0 | 70.0 | 20.0 | 1.00 | 1.10× | 1.17× | 0.0100× | 0.20× | 2.20× |",
		"| kernel | 3/3 | 25.0 | 30.0 | — | — | 0.50× | 0.50× | — | — | 1.00× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
