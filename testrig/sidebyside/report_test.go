package sidebyside

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

func TestTimes(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0.00×"},
		{1, "1.00×"},
		{4.153, "4.15×"},
		{0.01, "0.01×"},
		{0.000904, "0.0009×"},
		{0.0123, "0.01×"},
	} {
		if got := Times(tc.in); got != tc.want {
			t.Errorf("Times(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMarkdown: the report of bench/ovs (a goal, fine ratios) and of bench/vhost (neither)
// on the same five runs but for the baseline's name and probed CPU.
func TestMarkdown(t *testing.T) {
	lat := func(p50, p99 int64) qemutest.LatencyReport {
		return qemutest.LatencyReport{MedianNs: p50, P99Ns: p99}
	}
	for _, tc := range []struct {
		roles   Roles
		baseCPU float64
		want    []string
	}{
		{
			roles: Roles{Contender: "switch", Peer: "front end", Baseline: "ovs-dpdk", FineRatios: true,
				Goal: &Goal{Text: "The issue's goal (idle CPU ≤ 0.1× OVS-DPDK's at p50 ≤ 1.1× its):", IdleMax: 0.1, P50Max: 1.1}},
			baseCPU: 100,
			want: []string{
				"| switch | round | p50 µs | p99 µs | lost | late | CPU probed % | idle CPU % | run-queue wait, switch / front end (ms) | load after |",
				"| ovs-dpdk | 30.0 (1.00×) | 200.0 (1.00×) | 100.00 (1.00×) | 100.000 (1.00×) |",
				"| uiod-adaptive | 20.0 (0.67×) | 100.0 (0.50×) | 18.00 (0.18×) | 1.000 (0.01×) |",
				"- uiod-adaptive: idle 0.01× (met), p50 0.67× (met)",
				"- uiod-busy: idle 1.00× (not met), p50 1.17× (not met)",
			},
		},
		{
			roles:   Roles{Contender: "back end", Peer: "client", Baseline: "testpmd"},
			baseCPU: 90,
			want: []string{
				"| back end | round | p50 µs | p99 µs | lost | late | CPU probed % | idle CPU % | run-queue wait, back end / client (ms) | load after |",
				"| testpmd | 30.0 (1.00×) | 200.0 (1.00×) | 90.00 (1.00×) | 100.000 (1.00×) |",
				"| uiod-adaptive | 20.0 (0.67×) | 100.0 (0.50×) | 18.00 (0.20×) | 1.000 (0.01×) |",
			},
		},
	} {
		base := tc.roles.Baseline
		rep := Report{Roles: tc.roles, Rounds: 2, Probes: 10, Interval: 400 * time.Microsecond, Idle: time.Second, LoadStart: "1 2 3", LoadEnd: "4 5 6",
			Runs: []Run{
				{Name: base, Round: 1, Lat: lat(20000, 100000), ProbeCPU: tc.baseCPU, IdleCPU: 100},
				{Name: "uiod-adaptive", Round: 1, Lat: lat(10000, 50000), ProbeCPU: 9, IdleCPU: 0.5},
				{Name: "uiod-adaptive", Round: 2, Lat: lat(30000, 150000), ProbeCPU: 27, IdleCPU: 1.5, Wait: 3 * time.Millisecond, PeerWait: 250 * time.Millisecond, Load: "7.5 7 6"},
				{Name: base, Round: 2, Lat: lat(40000, 300000), ProbeCPU: tc.baseCPU, IdleCPU: 100},
				{Name: "uiod-busy", Round: 1, Lat: lat(35000, 50000), ProbeCPU: 100, IdleCPU: 100},
			}}
		md := rep.Markdown()
		testutil.TextContains(t, base+" report", md, append([]string{
			"load average 1 2 3 at the start, 4 5 6 at the end; 2 rounds, 10 probes 400µs apart",
			"| uiod-adaptive | 2 | 30.0 | 150.0 | 0 | 0 | 27.00 | 1.500 | 3 / 250 | 7.5 7 6 |",
		}, tc.want...)...)
		if strings.Contains(md, "- "+base+":") {
			t.Errorf("report judges the baseline against itself:\n%s", md)
		}
		if tc.roles.Goal == nil && strings.Contains(md, "goal") {
			t.Errorf("report without a goal has one:\n%s", md)
		}
		// Without the baseline there are no ratios and no verdicts.
		rep.Runs = rep.Runs[1:3]
		if md := rep.Markdown(); strings.Contains(md, "×") || strings.Contains(md, "goal") {
			t.Errorf("report without %s has ratios:\n%s", base, md)
		}
	}
}
