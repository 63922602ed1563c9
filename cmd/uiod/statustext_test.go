package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
)

// checkTables checks the tables of `uiod status` in out: every line fits width (0: any),
// every header is one token (as many words as cells in each row), and a column whose
// header ends right of its cells' start (a number column) has every cell ending where
// its header ends.
func checkTables(t *testing.T, out string, width int) {
	t.Helper()
	blocks := strings.Split(out, "\n\n")
	if len(blocks) < 3 {
		t.Fatalf("want a heading and two tables:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); width > 0 && n > width {
			t.Errorf("line of %d columns, more than %d:\n%s", n, width, l)
		}
	}
	numeric := regexp.MustCompile(`^[0-9.]+[kM]?$|^-$|^[0-9.]+(ns|µs|ms|s)$`)
	for _, blk := range blocks[1:] {
		lines := strings.Split(strings.TrimRight(blk, "\n"), "\n")
		if c := lines[0][0]; c >= 'a' && c <= 'z' && len(lines) > 1 {
			lines = lines[1:] // a caption above the table
		}
		heads := strings.Fields(lines[0])
		for _, row := range lines[1:] {
			cells := cellsOf(lines[0], row)
			if len(cells) != len(heads) {
				t.Errorf("row %q has %d cells under %d headers %q", row, len(cells), len(heads), heads)
				continue
			}
			for i, c := range cells {
				if numeric.MatchString(strings.TrimSpace(c.text)) && c.end != c.headEnd && i != len(heads)-1 {
					t.Errorf("column %s: number %q ends at %d, its header at %d (not right-aligned):\n%s\n%s",
						heads[i], c.text, c.end, c.headEnd, lines[0], row)
				}
			}
		}
	}
}

// cell is one cell of a row: its text, the rune column it ends at and where its header
// ends.
type cell struct {
	text         string
	end, headEnd int
}

// cellsOf splits row into cells by the columns of header: a cell is the text between two
// runs of at least two spaces.
func cellsOf(header, row string) []cell {
	split := func(s string) [][2]int { // rune spans of the words (a single space joins)
		r := []rune(s)
		var spans [][2]int
		for i := 0; i < len(r); {
			for i < len(r) && r[i] == ' ' {
				i++
			}
			if i == len(r) {
				break
			}
			j := i
			for j < len(r) && !(r[j] == ' ' && (j+1 == len(r) || r[j+1] == ' ')) {
				j++
			}
			spans = append(spans, [2]int{i, j})
			i = j
		}
		return spans
	}
	hs, rs := split(header), split(row)
	var cells []cell
	rr := []rune(row)
	for i, s := range rs {
		c := cell{text: string(rr[s[0]:s[1]]), end: s[1]}
		if i < len(hs) {
			c.headEnd = hs[i][1]
		}
		cells = append(cells, c)
	}
	return cells
}

// checkStatusJSON checks that no value of the report is a duration in text: durations
// are numbers, in fields named *_seconds.
func checkStatusJSON(t *testing.T, js string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		case string:
			if _, err := time.ParseDuration(v); err == nil {
				t.Errorf("%s is the duration %q as text", path, v)
			}
		case float64:
			if strings.HasSuffix(path, "_seconds") && v < 0 {
				t.Errorf("%s is %v", path, v)
			}
		}
	}
	walk("", doc)
	testutil.TextContains(t, "status JSON", js, `"uptime_seconds":`, `"idle_threshold_seconds":`, `"wait_timeout_seconds":`, `"max_stall_seconds":`, `"nic":`)
}

// TestStatusTables runs `uiod status` against a daemon with large counters, a long
// queue list and the auto policy's estimates: without --wide every line fits 80 columns
// (the queue list is cut with …), with --wide every column is there; headers are one
// token and numbers right-aligned. --json gives every duration as *_seconds.
func TestStatusTables(t *testing.T) {
	st := func(up float64, rx uint64) *daemon.Status {
		s := &daemon.Status{Version: "1.4.0-3", Uptime: "1h0m0s", UptimeSeconds: up,
			Policy: daemon.PolicyStatus{Mode: "adaptive", IdleThreshold: "auto", IdleThresholdAuto: true, WaitTimeout: "100ms", WaitTimeoutSeconds: 0.1, App: "l2fwd"}}
		for _, n := range []string{"uplink0", "downlink1"} {
			s.Ports = append(s.Ports, daemon.PortStatus{Name: n, PCI: "0000:81:00.1", Driver: "vfio-pci", NIC: "ixgbe",
				MAC: "52:54:00:12:34:56", LinkUp: true, SpeedMbps: 10000,
				Stats: daemon.PortStats{RxPackets: rx, TxPackets: rx, RxMissed: 123456, RxErrors: 7}})
		}
		for i := range 8 {
			s.Queues = append(s.Queues, daemon.QueueStatus{Name: "uplink0/rx" + string(rune('0'+i)), Thread: 0, Drops: rx / 1000,
				DropsBy: map[string]uint64{"no_route": rx/1000 - 3, "tx_full": 3}})
		}
		s.Threads = []daemon.ThreadStatus{{Index: 0, CPU: 12, State: "polling", CPUSeconds: up / 2, WallSeconds: up,
			Sleeps: rx / 10, WakeInterrupt: rx / 20, Threshold: "123.456µs", GapEstimate: "400µs", WakeCost: "12.5µs",
			Period: "400µs", Lead: "30µs", MaxStall: "2.5ms",
			ThresholdSeconds: 123.456e-6, GapEstimateSeconds: ptr(400e-6), WakeCostSeconds: ptr(12.5e-6),
			PeriodSeconds: ptr(400e-6), LeadSeconds: ptr(30e-6), MaxStallSeconds: 2.5e-3}}
		return s
	}
	u := fakeDaemon(t, st(3600, 9_000_000_000), st(3601, 9_014_880_000))
	for _, tt := range []struct {
		args  []string
		width int
		want  []string
	}{
		{nil, statusWidth, []string{"uiod at ", ", version 1.4.0-3\n", "poll adaptive, idle_threshold auto", "PORT", "NIC", "ixgbe", "14.88M", "123.5µs", "…",
			"drops since start, by reason", "REASON", "no_route", "72119016", "tx_full"}},
		{[]string{"--wide"}, 0, []string{"vfio-pci", "52:54:00:12:34:56", "9014880000", "GAP", "400µs", "WAKECOST", "12.5µs", "uplink0/rx7"}},
	} {
		out, err := execUIOD(t, append([]string{"status", "--metrics", u.String(), "--interval", "10ms"}, tt.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("uiod status %v:\n%s", tt.args, out)
		checkTables(t, out, tt.width)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("uiod status %v lacks %q", tt.args, w)
			}
		}
	}
	out, err := execUIOD(t, "status", "--metrics", u.String(), "--interval", "10ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	checkStatusJSON(t, out)
	var r map[string]any
	json.Unmarshal([]byte(out), &r)
	th := r["threads"].([]any)[0].(map[string]any)
	if th["idle_threshold_seconds"] != 123.456e-6 || th["max_stall_seconds"] != 2.5e-3 || th["gap_estimate_seconds"] != 400e-6 {
		t.Errorf("thread durations %v", th)
	}
	if by := r["ports"].([]any)[0].(map[string]any)["drops_by"].(map[string]any); by["tx_full"] != 24.0 {
		t.Errorf("drops_by of uplink0 %v, want tx_full 24 (3 on each of 8 queues)", by)
	}
	if r["version"] != "1.4.0-3" {
		t.Errorf("version %v", r["version"])
	}
	pol := r["policy"].(map[string]any)
	if pol["idle_threshold_auto"] != true || pol["idle_threshold_seconds"] != nil || pol["wait_timeout_seconds"] != 0.1 {
		t.Errorf("policy %v", pol)
	}
}

func ptr[T any](v T) *T { return &v }
