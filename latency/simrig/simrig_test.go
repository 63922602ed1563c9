package simrig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/wire"
)

// TestRunMeasuresEachPolicy runs two policies on the model ports: each row has its probes
// forwarded, the busy one never sleeps, and the table and JSON carry every row.
func TestRunMeasuresEachPolicy(t *testing.T) {
	var progress bytes.Buffer
	pols := []Policy{{"busy", idle.PolicyConfig{Mode: idle.Busy}}, {"adaptive", idle.PolicyConfig{Mode: idle.Adaptive}}}
	rows, err := Run(context.Background(), pols, latency.Config{Count: 100, Pattern: latency.Constant{Gap: 200 * time.Microsecond}, Label: "rig"},
		Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.Policy != pols[i].Name || r.Result.Sent != 100 || r.Result.Received == 0 || r.Result.Label != "rig "+pols[i].Name {
			t.Errorf("row %d: policy %s label %q sent %d received %d", i, r.Policy, r.Result.Label, r.Result.Sent, r.Result.Received)
		}
	}
	if rows[0].Sleeps != 0 || rows[0].Wakeups != 0 {
		t.Errorf("busy slept %d times, woke %d", rows[0].Sleeps, rows[0].Wakeups)
	}
	t.Logf("busy: %d received; adaptive: %d received, %d sleeps, %d wake-ups by interrupt",
		rows[0].Result.Received, rows[1].Result.Received, rows[1].Sleeps, rows[1].Wakeups)
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[0], "CPU%") {
		t.Errorf("table:\n%s", table.String())
	}
	var js []map[string]any
	b, _ := json.Marshal(rows)
	if err := json.Unmarshal(b, &js); err != nil || len(js) != 2 || js[1]["policy"] != "adaptive" || js[1]["latency"] == nil {
		t.Errorf("JSON %s: %v", b, err)
	}
	if !strings.Contains(progress.String(), "[2/2] adaptive: CPU") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// TestRunOnEachNIC measures the adaptive policy on each kind of model port: the bench is
// built of the named model and driver, the probes come back, and no frame is lost by a
// model or driver. An unknown kind is refused naming the ones there are.
func TestRunOnEachNIC(t *testing.T) {
	types := map[string]string{NICIxgbe: "*ixgbe.Port", NICIgb: "*igb.Port", NICIgbvf: "*igbvf.Port", NICVirtio: "*virtio.Port"}
	for _, name := range NICs {
		t.Run(name, func(t *testing.T) {
			var cable [2]wire.Port
			for i := range cable {
				cable[i], _ = wire.Pair()
			}
			s, err := OpenNIC(name, cable)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range s.NICs {
				if got := fmt.Sprintf("%T", p); got != types[name] {
					t.Errorf("port %d opened by %s, want %s", i, got, types[name])
				}
			}
			s.Close()
			pols := []Policy{{"adaptive", idle.PolicyConfig{Mode: idle.Adaptive}}}
			var progress bytes.Buffer
			rows, err := Run(context.Background(), pols, latency.Config{Count: 50, Pattern: latency.Constant{Gap: 200 * time.Microsecond}},
				Options{NIC: name, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Result.Sent != 50 || rows[0].Result.Received == 0 {
				t.Fatalf("rows %+v", rows)
			}
			if strings.Contains(progress.String(), "(port ") {
				t.Errorf("frames lost by the bench:\n%s", progress.String())
			}
			t.Logf("%s: %d of 50 back, %d sleeps, %d woken by interrupt", name, rows[0].Result.Received, rows[0].Sleeps, rows[0].Wakeups)
		})
	}
	_, err := OpenNIC("e1000", [2]wire.Port{})
	testutil.ErrorContains(t, err, `nic "e1000"`, "ixgbe, igb, igbvf, virtio")
}

// TestWriteTable prints rows of known figures: one unit per column (latencies in µs
// without a unit of their own), n/a for a CPU share over less than MinCPUWindow and for
// the latency of a run with no probe back.
func TestWriteTable(t *testing.T) {
	h := hdrhistogram.New(1, 10_000_000, 3)
	h.RecordValues(1500, 3)
	h.RecordValue(2500)
	tests := []struct {
		row  Row
		want string
	}{
		{Row{Policy: "busy", CPU: 99.5, CPUWindow: time.Second, Result: &latency.Result{Hist: h}}, "busy 99.5 4 1.5 2.5 2.5 0 - 0 0"},
		{Row{Policy: "auto", CPU: 3, CPUWindow: MinCPUWindow, Predicted: 9, Caught: 7, Sleeps: 4, Wakeups: 2, Result: &latency.Result{Hist: h, Lost: 1}},
			"auto 3.0 4 1.5 2.5 2.5 2 7/9 4 1"},
		{Row{Policy: "short", CPU: 50, CPUWindow: MinCPUWindow - time.Millisecond, Result: &latency.Result{Hist: h}}, "short n/a 4 1.5 2.5 2.5 0 - 0 0"},
		{Row{Policy: "none", CPUWindow: time.Second, Result: &latency.Result{Lost: 5}}, "none 0.0 0 n/a n/a n/a 0 - 0 5"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteTable(&b, []Row{tt.row}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != tt.want {
			t.Errorf("%s: table\n%s\nwant the row %q", tt.row.Policy, b.String(), tt.want)
		}
		js, _ := json.Marshal(tt.row)
		if short := !tt.row.CPUMeasured(); short != strings.Contains(string(js), `"cpu_percent":null`) {
			t.Errorf("%s: JSON %s", tt.row.Policy, js)
		}
	}
}
