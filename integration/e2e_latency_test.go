package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// e2eLatencyTable formats the runs' latencies as a Markdown table, one row per direction.
func e2eLatencyTable(ds []direction, runs map[string]*latencyRun) string {
	var b strings.Builder
	b.WriteString("\n| NIC | probes | received by | min | median | mean | p99 | max |\n|---|---|---|---|---|---|---|---|\n")
	us := func(ns float64) string { return fmt.Sprintf("%.0f µs", ns/1e3) }
	for _, d := range ds {
		r := runs[d.name]
		if r == nil {
			continue
		}
		rx := "vfio-pci MSI-X"
		if d.in%2 == 1 {
			rx = "uio_pci_generic INTx"
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %s | %s | %s | %s |\n", d.model, r.Received+r.Late, r.Sent, rx,
			us(float64(r.MinNs)), us(float64(r.MedianNs)), us(r.AverageNs), us(float64(r.P99Ns)), us(float64(r.MaxNs)))
	}
	return b.String()
}

// latencyRun is one direction's `uiod latency --json` result.
type latencyRun struct {
	Name string
	qemutest.LatencyReport
}

// runLatency sends the probes into tx's wire and receives them from rx's with the host's
// uiod binary at bin.
func runLatency(t *testing.T, bin, name string, tx, rx qemutest.NIC) (*latencyRun, error) {
	out, rep, err := qemutest.Latency(bin, tx, rx, t.TempDir(), name, 2*time.Minute,
		"--count", strconv.Itoa(e2eProbes), "--interval", e2eInterval.String(), "--timeout", e2eProbeTimeout.String())
	if err != nil {
		return nil, err
	}
	t.Log(out)
	return &latencyRun{Name: name, LatencyReport: *rep}, nil
}

// checkProbes checks that one direction forwarded every probe exactly once. How many came
// later than e2eProbeTimeout depends on the machine's load: it is reported.
func checkProbes(t *testing.T, r *latencyRun) {
	t.Helper()
	t.Logf("sent %d, received %d, late %d, lost %d; latency min %v, median %v, mean %v, p99 %v, max %v",
		r.Sent, r.Received, r.Late, r.Lost, time.Duration(r.MinNs), time.Duration(r.MedianNs),
		time.Duration(r.AverageNs).Round(time.Microsecond), time.Duration(r.P99Ns), time.Duration(r.MaxNs))
	if r.Sent != e2eProbes || r.SendErrors != 0 {
		t.Errorf("sent %d probes with %d send errors, want %d and none", r.Sent, r.SendErrors, e2eProbes)
	}
	if r.Received+r.Late != r.Sent || r.Lost != 0 || r.Duplicates != 0 {
		t.Errorf("%d of %d probes came back (%d of them late), lost %d, duplicates %d; want all exactly once",
			r.Received+r.Late, r.Sent, r.Late, r.Lost, r.Duplicates)
	}
}
