package vhost

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

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
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
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
	for _, want := range []string{
		"load average 1 2 3 at the start, 4 5 6 at the end; 2 rounds, 10 probes 400µs apart",
		"| uiod-adaptive | 2 | 30.0 | 150.0 | 0 | 0 | 27.00 | 1.500 | 3 / 250 | 7.5 7 6 |",
		"| testpmd | 30.0 (1.00×) | 200.0 (1.00×) | 90.00 (1.00×) | 100.000 (1.00×) |",
		"| uiod-adaptive | 20.0 (0.67×) | 100.0 (0.50×) | 18.00 (0.20×) | 1.000 (0.01×) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
