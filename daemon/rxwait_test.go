package daemon

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
)

// TestRxWaitStatusAndMetric converts a dataplane histogram: cumulative buckets in
// seconds, quantiles at bucket bounds, and a Prometheus histogram with the same counts.
func TestRxWaitStatusAndMetric(t *testing.T) {
	b := make([]uint64, len(dataplane.RxWaitBounds)+1)
	b[1], b[3], b[len(b)-1] = 98, 1, 1 // 98 ≤ 1 µs, 1 ≤ 4 µs, 1 beyond every bound
	st := rxWaitStatus([]dataplane.RxWaitStats{{Port: "p0", Wake: idle.WakeInterrupt, Buckets: b, Count: 100, Sum: 200 * time.Microsecond, Lost: 2}})
	if len(st) != 1 || st[0].Wake != "interrupt" || st[0].Buckets[1].Count != 98 || st[0].Buckets[3].Count != 99 ||
		st[0].Buckets[len(st[0].Buckets)-1].Count != 99 || st[0].Buckets[1].LeSeconds != 1e-6 {
		t.Fatalf("status %+v", st)
	}
	for _, tt := range []struct {
		q    float64
		want float64
	}{{0.5, 1e-6}, {0.99, 4e-6}, {1, math.Inf(1)}} {
		if got := st[0].Quantile(tt.q); got != tt.want {
			t.Errorf("quantile %v = %v, want %v", tt.q, got, tt.want)
		}
	}
	if q := (RxWaitStatus{}).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("quantile of nothing = %v", q)
	}
	ch := make(chan prometheus.Metric, 4)
	collectRxWaits(ch, Status{RxWaits: st})
	close(ch)
	var hist, lost bool
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		desc := m.Desc().String()
		switch {
		case strings.Contains(desc, "uiod_port_rx_wait_seconds"):
			h := pb.GetHistogram()
			hist = h.GetSampleCount() == 100 && math.Abs(h.GetSampleSum()-200e-6) < 1e-12 && h.GetBucket()[3].GetCumulativeCount() == 99
		case strings.Contains(desc, "stamps_lost"):
			lost = pb.GetCounter().GetValue() == 2
		}
	}
	if !hist || !lost {
		t.Errorf("metrics: histogram right %v, lost right %v", hist, lost)
	}
}

// TestDaemonRxWaitsOnModelPorts: the daemon's Intel model ports, behind their live ports,
// have RX wait histograms in /status (every cause of each), so the dataplane reached
// their 1588 units through the live port.
func TestDaemonRxWaitsOnModelPorts(t *testing.T) {
	d, _ := startDaemon(t, simConfig(t, "rxwait", "busy", ""))
	ports := map[string]int{}
	for _, w := range d.Status().RxWaits {
		ports[w.Port]++
	}
	if ports["a"] != int(idle.NumWakes) || ports["b"] != int(idle.NumWakes) {
		t.Errorf("rx wait histograms by port %v, want %d each for a and b", ports, idle.NumWakes)
	}
}
