package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/latency/simrig"
)

// execSplit runs `uiod ARGS` in-process and returns stdout and stderr apart.
func execSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var g globals
	root := newRootCmd(&g) // Execute adds the completion command, writing to SetOut's writer
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestLatencyMachineOutputOnStdout runs `uiod latency --json -` and `--csv -` as a
// script piping into jq would: stdout is the document alone and parses; the heading, the
// table, the Samples: line and the progress are on stderr.
func TestLatencyMachineOutputOnStdout(t *testing.T) {
	parseJSON := func(s string) error { var v any; return json.Unmarshal([]byte(s), &v) }
	parseCSV := func(s string) error { _, err := csv.NewReader(strings.NewReader(s)).ReadAll(); return err }
	tests := []struct {
		name      string
		args      []string
		parse     func(string) error
		outPrefix string
		errWants  []string
	}{
		{"sim json", []string{"--sim", "--duration", "200ms", "--policies", "busy,adaptive", "--json", "-"}, parseJSON,
			"[\n  {\n    \"policy\": \"busy\"", []string{"uiod latency --sim:", "policy", "p50(µs)", "[2/2] adaptive"}},
		{"sim csv", []string{"--sim", "--duration", "200ms", "--policies", "busy", "--csv", "-"}, parseCSV,
			"label,latency,count\nbusy,", []string{"uiod latency --sim:", "p50(µs)", "[1/1] busy"}},
		{"wire json", []string{"--tx", "pair:stdout-json", "--count", "100", "--interval", "100us", "--json", "-"}, parseJSON,
			"{\n  \"label\": \"pair:stdout-json\"", []string{"[pair:stdout-json] Samples: 100,"}},
		{"wire csv", []string{"--tx", "pair:stdout-csv", "--count", "100", "--interval", "100us", "--csv", "-"}, parseCSV,
			"latency,count\n", []string{"[pair:stdout-csv] Samples: 100,"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := execSplit(t, append([]string{"latency"}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if err := tt.parse(stdout); err != nil {
				t.Errorf("stdout does not parse: %v\n%s", err, stdout)
			}
			if !strings.HasPrefix(stdout, tt.outPrefix) {
				t.Errorf("stdout starts %q, want %q", stdout[:min(len(stdout), 60)], tt.outPrefix)
			}
			testutil.TextLacks(t, "stdout", stdout, "Samples:", "p50(µs)", "latency:")
			testutil.TextContains(t, "stderr", stderr, tt.errWants...)
		})
	}
	_, _, err := execSplit(t, "latency", "--sim", "--json", "-", "--csv", "-")
	testutil.ErrorContains(t, err, "--json", "stdout", "--csv")
	if code := run([]string{"latency", "--sim", "--json", "-", "--csv", "-"}); code != exitUsage {
		t.Errorf("--json - --csv -: exit %d, want %d", code, exitUsage)
	}
}

// TestLatencyDemoTable runs the demo on each kind of model port: its heading and plot
// title name the NIC model, the driver, the pattern and the duration; it prints one
// table (no Samples: lines), each column in one unit; a run whose poll thread ran too
// short to measure its CPU (by the window the JSON gives) shows n/a there and null in the
// JSON. (Whether 10 probes make a short enough run depends on the machine's load:
// simrig's TestWriteTable checks n/a against fixed windows.)
func TestLatencyDemoTable(t *testing.T) {
	tests := []struct {
		args    []string
		heading string
	}{
		{[]string{"--nic", "igb", "--duration", "300ms", "--interval", "200us"},
			"l2fwd between two model Intel 82576 ports (igb), constant:200µs, 300ms per policy"},
		{[]string{"--nic", "virtio", "--count", "10", "--pattern", "poisson:5kpps"},
			"l2fwd between two model virtio-net ports (virtio), poisson:5kpps, 10 probes per policy"},
		{[]string{"--count", "20"},
			"l2fwd between two model Intel 82599 ports (ixgbe), constant:400µs, 20 probes per policy"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			plot, js := filepath.Join(dir, "p.svg"), filepath.Join(dir, "r.json")
			args := append([]string{"latency", "--sim", "--policies", "busy,adaptive", "--plot", plot, "--json", js}, tt.args...)
			stdout, stderr, err := execSplit(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			t.Log("\n" + stdout)
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if len(lines) != 4 || lines[0] != "uiod latency --sim: "+tt.heading {
				t.Fatalf("want the heading %q and a table of 2 rows, got\n%s", tt.heading, stdout)
			}
			header := strings.Fields(lines[1])
			want := []string{"policy", "CPU%", "samples", "p50(µs)", "p99(µs)", "max(µs)", "wakeups", "predicted", "sleeps", "lost"}
			if strings.Join(header, " ") != strings.Join(want, " ") {
				t.Errorf("header %q, want %q", header, want)
			}
			var rows []map[string]any
			b, _ := os.ReadFile(js)
			if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 2 {
				t.Fatalf("JSON %s: %v", b, err)
			}
			for i, l := range lines[2:] {
				row := strings.Fields(l)
				if len(row) != len(want) {
					t.Fatalf("row %q has %d cells", l, len(row))
				}
				window, _ := rows[i]["cpu_window_seconds"].(float64)
				short := window < simrig.MinCPUWindow.Seconds()
				if na := row[1] == "n/a"; na != short {
					t.Errorf("row %q: CPU %q over %.3fs, want n/a %v", l, row[1], window, short)
				}
				if _, isNum := rows[i]["cpu_percent"].(float64); isNum == short {
					t.Errorf("JSON cpu_percent %v over %.3fs, want null %v", rows[i]["cpu_percent"], window, short)
				}
				for _, c := range row[3:6] { // µs: a bare number, no unit of its own
					if c == "n/a" && row[2] == "0" {
						continue // no sample came back (a loaded machine can starve the run): nothing to show
					}
					if strings.TrimRight(c, "0123456789.") != "" {
						t.Errorf("row %q: latency cell %q is not a number of µs", l, c)
					}
				}
			}
			testutil.TextLacks(t, "stdout", stdout, "Samples:")
			svg, _ := os.ReadFile(plot)
			testutil.TextContains(t, "plot", string(svg), strings.TrimPrefix(tt.heading, "l2fwd between two "))
		})
	}
}

// TestLatencyInterrupt starts the demo as a user would, presses Ctrl-C (SIGINT) while
// the second policy runs, and checks that it exits 130 with the table of what it had
// measured: the first policy whole and the second cut short.
func TestLatencyInterrupt(t *testing.T) {
	cmd := exec.Command(uiodBinary(t), "latency", "--sim", "--duration", "2s", "--policies", "busy,adaptive,auto")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	p := startLogging(t, cmd, "[2/3] adaptive: constant", 60*time.Second) // the second policy started
	time.Sleep(200 * time.Millisecond)                                    // into the second policy's run
	werr := p.stopWithin(t, syscall.SIGINT, 30*time.Second)
	errText := p.log
	t.Log("\n" + stdout.String() + errText.String())
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d", code, werr, exitInterrupted)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	// The columns are as wide as their widest cell (a busy poller's CPU% can be "100.0"),
	// so the rows are compared by their fields.
	if len(lines) != 4 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "policy CPU% samples") ||
		strings.Fields(lines[2])[0] != "busy" || strings.Fields(lines[3])[0] != "adaptive" {
		t.Fatalf("want the heading and the busy and adaptive rows, got\n%s", stdout.String())
	}
	testutil.TextContains(t, "stderr", errText.String(), "interrupted: 2 of 3 runs measured")
	testutil.TextLacks(t, "stderr", errText.String(), "[3/3]")
}

// TestLatencySimDeviceClock runs `uiod latency --sim --timestamps hw`: on igb the table
// has the device-clock columns beside the software ones and the JSON each run's
// device_clock and clock; on virtio, which cannot timestamp, stderr says so and nothing
// is labelled device clock.
func TestLatencySimDeviceClock(t *testing.T) {
	for _, tt := range []struct {
		nic string
		hw  bool
	}{{"igb", true}, {"virtio", false}} {
		t.Run(tt.nic, func(t *testing.T) {
			stdout, stderr, err := execSplit(t, "latency", "--sim", "--nic", tt.nic, "--timestamps", "hw", "--count", "100",
				"--interval", "1ms", "--policies", "busy", "--json", "-")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var rows []struct {
				Latency struct {
					DeviceClock *struct {
						Samples  uint64 `json:"samples"`
						MedianNs int64  `json:"median_ns"`
					} `json:"device_clock"`
					Clock *struct {
						ErrorNs int64 `json:"error_ns"`
					} `json:"clock"`
				} `json:"latency"`
			}
			if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
				t.Fatalf("JSON: %v\n%s", err, stdout)
			}
			l := rows[0].Latency
			if got := l.DeviceClock != nil && l.Clock != nil; got != tt.hw {
				t.Fatalf("device clock in the JSON: %v, want %v\n%s", got, tt.hw, stdout)
			}
			hasCols := strings.Contains(stderr, "dev p50(µs)")
			if hasCols != tt.hw {
				t.Errorf("device-clock columns in the table: %v, want %v\n%s", hasCols, tt.hw, stderr)
			}
			if said := strings.Contains(stderr, "cannot timestamp"); said == tt.hw {
				t.Errorf("fallback message %v, want %v\n%s", said, !tt.hw, stderr)
			}
		})
	}
}
