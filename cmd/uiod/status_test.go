package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
)

// TestStatusReport checks the rates and per-thread figures computed from two samples.
func TestStatusReport(t *testing.T) {
	port := func(rx, tx uint64) daemon.PortStatus {
		return daemon.PortStatus{Name: "a", LinkUp: true, Stats: daemon.PortStats{RxPackets: rx, TxPackets: tx}}
	}
	thread := func(cpu, wall float64, sleeps, irq, tmo uint64) daemon.ThreadStatus {
		return daemon.ThreadStatus{Index: 0, State: "asleep", CPUSeconds: cpu, WallSeconds: wall, CPUPercent: 100 * cpu / wall,
			Sleeps: sleeps, WakeInterrupt: irq, WakeTimeout: tmo}
	}
	sample := func(up float64, p daemon.PortStatus, drops uint64, th daemon.ThreadStatus) daemon.Status {
		return daemon.Status{UptimeSeconds: up, Ports: []daemon.PortStatus{p}, Threads: []daemon.ThreadStatus{th},
			Queues: []daemon.QueueStatus{{Name: "a/rx0", Thread: 0, Drops: drops}, {Name: "ab/rx0", Thread: 1, Drops: 1000}}}
	}
	tests := []struct {
		name           string
		prev, cur      daemon.Status
		interval       float64
		rx, tx, dropsS float64
		drops          uint64
		cpu, sleeps    float64
		irq, tmo       float64
	}{
		{"two samples", sample(10, port(100, 50), 3, thread(1, 10, 10, 4, 6)), sample(12, port(300, 150), 7, thread(1.5, 12, 30, 14, 16)),
			2, 100, 50, 2, 7, 25, 10, 5, 5},
		{"restart between samples", sample(10, port(100, 50), 3, thread(1, 10, 10, 4, 6)), sample(1, port(20, 10), 1, thread(0.25, 1, 2, 1, 1)),
			0, 0, 0, 0, 1, 25, 0, 0, 0},
		{"one sample", daemon.Status{}, sample(4, port(20, 10), 1, thread(1, 4, 2, 1, 1)),
			0, 0, 0, 0, 1, 25, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newStatusReport("http://x", tt.prev, tt.cur)
			if r.IntervalSeconds != tt.interval {
				t.Errorf("interval %v, want %v", r.IntervalSeconds, tt.interval)
			}
			p := r.Ports[0]
			if p.RxPerSecond != tt.rx || p.TxPerSecond != tt.tx || p.Drops != tt.drops || p.DropsPerSecond != tt.dropsS {
				t.Errorf("port: rx/s %v tx/s %v drops %d drops/s %v; want %v %v %d %v", p.RxPerSecond, p.TxPerSecond, p.Drops, p.DropsPerSecond, tt.rx, tt.tx, tt.drops, tt.dropsS)
			}
			th := r.Threads[0]
			if th.CPUPercent != tt.cpu || th.SleepsPerSecond != tt.sleeps || th.WakeupsPerSecond.Interrupt != tt.irq || th.WakeupsPerSecond.Timeout != tt.tmo {
				t.Errorf("thread: cpu %v%% sleeps/s %v irq/s %v timeout/s %v; want %v %v %v %v", th.CPUPercent, th.SleepsPerSecond,
					th.WakeupsPerSecond.Interrupt, th.WakeupsPerSecond.Timeout, tt.cpu, tt.sleeps, tt.irq, tt.tmo)
			}
			if len(th.Queues) != 1 || th.Queues[0] != "a/rx0" {
				t.Errorf("thread queues %v, want [a/rx0]", th.Queues)
			}
		})
	}
}

// TestStatusReportStalls checks the stall rate and share, and the runtime-yield rate,
// over the interval.
func TestStatusReportStalls(t *testing.T) {
	sample := func(up, wall float64, stalls uint64, secs float64, yields uint64) daemon.Status {
		return daemon.Status{UptimeSeconds: up, Threads: []daemon.ThreadStatus{{WallSeconds: wall, Stalls: stalls, StallSeconds: secs, RuntimeYields: yields}}}
	}
	r := newStatusReport("http://x", sample(10, 10, 100, 0.1, 1000), sample(12, 12, 1100, 0.14, 1250))
	th := r.Threads[0]
	if th.StallsPerSecond != 500 || math.Abs(th.StalledPercent-2) > 1e-9 || th.RuntimeYieldsPerSecond != 125 {
		t.Fatalf("stalls/s %v, stalled %v %%, yields/s %v; want 500, 2 and 125", th.StallsPerSecond, th.StalledPercent, th.RuntimeYieldsPerSecond)
	}
	var b strings.Builder
	r.writeText(&b, true)
	testutil.TextContains(t, "the wide thread table", b.String(), "STALLS/s", "2.00", "YIELDS/s", "125")
}

// TestStatusLive runs `uiod status` against an in-process sim daemon that forwarded a
// known number of frames.
func TestStatusLive(t *testing.T) {
	s := startSimDaemon(t, "cstatus")
	const n = 200
	s.forward(t, n)

	out, err := execUIOD(t, "status", "--metrics", s.addr, "--interval", "50ms")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	t.Logf("uiod status:\n%s", out)
	testutil.TextContains(t, "output", out, "uiod at http://"+s.addr, "PORT", "RX/s", "NIC", "THREAD", "CPU%", "IRQ/s", "THRESHOLD", "a/rx0,b/rx0")
	checkTables(t, out, statusWidth)
	for _, p := range []string{"a", "b"} {
		if !lineWith(out, p+" ", "ixgbe", "up 10G") {
			t.Errorf("no line for port %s with nic ixgbe and link up 10G:\n%s", p, out)
		}
	}
	out, err = execUIOD(t, "status", "--metrics", s.addr, "--interval", "50ms", "--wide")
	if err != nil {
		t.Fatalf("status --wide: %v", err)
	}
	t.Logf("uiod status --wide:\n%s", out)
	checkTables(t, out, 0)
	for _, p := range []string{"a", "b"} {
		if !lineWith(out, p+" ", "sim", "ixgbe", "up 10G", " 200 ") {
			t.Errorf("no wide line for port %s with driver sim, nic ixgbe, link up 10G and 200 frames:\n%s", p, out)
		}
	}
	testutil.TextContains(t, "status --wide", out, "GAP", "WAKECOST", "TIMEOUT/s", "MAC")

	out, err = execUIOD(t, "status", "--metrics", "http://"+s.addr+"/", "--json", "--interval", "50ms")
	if err != nil {
		t.Fatalf("status --json: %v", err)
	}
	var r statusReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("status --json is not one JSON object: %v\n%s", err, out)
	}
	if len(r.Ports) != 2 || len(r.Threads) != 1 || r.IntervalSeconds <= 0 {
		t.Fatalf("report %+v: want 2 ports, 1 thread, an interval", r)
	}
	for _, p := range r.Ports {
		if !p.LinkUp || p.Stats.RxPackets != n || p.Stats.TxPackets != n || p.Drops != 0 {
			t.Errorf("port %s: link %v rx %d tx %d drops %d; want up, %d, %d, 0", p.Name, p.LinkUp, p.Stats.RxPackets, p.Stats.TxPackets, p.Drops, n, n)
		}
	}
	th := r.Threads[0]
	switch th.State {
	case "polling", "armed", "asleep", "yielding":
	default:
		t.Errorf("thread state %q", th.State)
	}
	if th.ThresholdSeconds < 0 || len(th.Queues) != 2 || th.CPUPercent < 0 || th.CPUPercent > 100.5 {
		t.Errorf("thread %+v", th)
	}
	if r.UptimeSeconds <= 0 || r.Ports[0].NIC != "ixgbe" || r.Ports[0].Driver != "sim" {
		t.Errorf("report: uptime_seconds %v, port driver %q nic %q; want > 0, sim, ixgbe", r.UptimeSeconds, r.Ports[0].Driver, r.Ports[0].NIC)
	}
	checkStatusJSON(t, out)

	// The address from the configuration, and --watch: one frame per refresh.
	cfgFile := filepath.Join(t.TempDir(), "uiod.yaml")
	if err := os.WriteFile(cfgFile, []byte(s.yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = execUIOD(t, "status", "--config", cfgFile, "--watch", "--count", "3", "--interval", "20ms")
	if err != nil {
		t.Fatalf("status --watch: %v", err)
	}
	if c := strings.Count(out, "uiod at http://"+s.addr); c != 3 {
		t.Errorf("--watch --count 3 printed %d reports:\n%s", c, out)
	}
	// Neither flag: the installed configuration under --root names the address.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/uiod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/uiod/uiod.yaml"), []byte(s.yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = execUIOD(t, "--root", root, "status", "--interval", "20ms")
	if err != nil || !strings.Contains(out, "uiod at http://"+s.addr) {
		t.Errorf("status with %s/etc/uiod/uiod.yaml: %v\n%s", root, err, out)
	}
	out, err = execUIOD(t, "status", "-c", cfgFile, "-w", "-n", "2", "-i", "20ms", "--json")
	if err != nil {
		t.Fatalf("status --watch --json: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("--watch --json --count 2 printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Errorf("line is not a JSON report: %v", err)
		}
	}
}

// lineWith reports whether one line of out contains every one of want.
func lineWith(out string, want ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestStatusNoDaemon: nothing listening at the address is a clear message and exit 1.
func TestStatusNoDaemon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, stderr, code := runUIOD(t, "", nil, "status", "--metrics", addr)
	if code != exitFailure || !strings.Contains(stderr, "no uiod daemon is answering at http://"+addr) {
		t.Errorf("exit %d, stderr %q; want 1 and a message naming %s", code, stderr, addr)
	}
}

// TestStatusUsage: bad flags exit 2 before anything is fetched.
func TestStatusUsage(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	badRoot := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(badRoot, "etc/uiod"), 0o755)
	os.WriteFile(filepath.Join(badRoot, "etc/uiod/uiod.yaml"), []byte("bogus_key: 1\n"), 0o644)
	os.WriteFile(off, []byte("metrics: {listen: \"\"}\nports:\n  - {name: a, driver: sim, wire: \"pair:x\"}\nforward: {mode: reflect}\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--interval", "0s"}, "--interval"},
		{[]string{"status", "--watch", "--count", "-1"}, "--count"},
		{[]string{"status", "--count", "2"}, "--watch"},
		{[]string{"status", "--config", off, "--metrics", "127.0.0.1:1"}, "give one"},
		{[]string{"status", "--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{[]string{"status", "--config", off}, "metrics.listen is empty"},
		{[]string{"status", "--metrics", "https://127.0.0.1:1"}, "only http://"},
		{[]string{"status", "--metrics", "localhost"}, "host:port"},
		{[]string{"status", "extra"}, "unknown command"},
		{[]string{"--root", badRoot, "status"}, filepath.Join(badRoot, "etc/uiod/uiod.yaml")},
	}
	for _, tt := range tests {
		_, stderr, code := runUIOD(t, "", nil, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("uiod %q: exit %d, stderr %q; want 2 naming %q", tt.args, code, stderr, tt.want)
		}
	}
}

func TestMetricsURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"127.0.0.1:9477", "http://127.0.0.1:9477"},
		{"0.0.0.0:9477", "http://127.0.0.1:9477"},
		{"[::]:9477", "http://[::1]:9477"},
		{":9477", "http://127.0.0.1:9477"},
		{"http://[::1]:1/", "http://[::1]:1"},
		{"localhost:80", "http://localhost:80"},
	} {
		u, err := metricsURL(tt.in)
		if err != nil || u.String() != tt.want {
			t.Errorf("metricsURL(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
}

// fakeDaemon serves the given /status answers in turn (a nil one is a 503), the last one
// from then on.
func fakeDaemon(t *testing.T, answers ...*daemon.Status) *url.URL {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := answers[min(n, len(answers)-1)]
		n++
		mu.Unlock()
		if a == nil {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStatusWatchRecovers: with --watch a refresh whose sample fails says why and the
// watch goes on; the report after it has no rates (no previous sample), the next one has.
// Without --watch the same failure is the command's error.
func TestStatusWatchRecovers(t *testing.T) {
	st := func(up float64, rx uint64) *daemon.Status {
		return &daemon.Status{UptimeSeconds: up, Ports: []daemon.PortStatus{{Name: "a", Stats: daemon.PortStats{RxPackets: rx}}}}
	}
	base := fakeDaemon(t, st(1, 100), st(2, 300), nil, st(0.5, 10), st(1.5, 60))
	var out strings.Builder
	w := statusWatcher{client: http.DefaultClient, base: base, out: &out, asJSON: true, interval: time.Millisecond}
	if err := w.run(context.Background(), 4, true); err != nil {
		t.Fatalf("watch: %v", err)
	}
	var reps []statusReport
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r statusReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		reps = append(reps, r)
	}
	if len(reps) != 4 {
		t.Fatalf("%d reports, want 4:\n%s", len(reps), out.String())
	}
	if reps[0].Error != "" || reps[0].Ports[0].RxPerSecond != 200 {
		t.Errorf("report 1: %+v, want 200 frames/s", reps[0])
	}
	if !strings.Contains(reps[1].Error, "503") {
		t.Errorf("report 2: error %q, want the 503", reps[1].Error)
	}
	if reps[2].Error != "" || reps[2].IntervalSeconds != 0 || reps[2].Ports[0].RxPerSecond != 0 {
		t.Errorf("report 3 (first after the failure): %+v, want no rates", reps[2])
	}
	if reps[3].Ports[0].RxPerSecond != 50 {
		t.Errorf("report 4: %+v, want 50 frames/s", reps[3])
	}

	base = fakeDaemon(t, st(1, 100), nil)
	w = statusWatcher{client: http.DefaultClient, base: base, out: io.Discard, interval: time.Millisecond}
	if err := w.run(context.Background(), 1, false); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("without --watch: %v, want the 503", err)
	}
}

// TestStatusWatchInPlace: on a terminal every refresh first homes the cursor and clears
// the screen, so the report redraws in place.
func TestStatusWatchInPlace(t *testing.T) {
	base := fakeDaemon(t, &daemon.Status{UptimeSeconds: 1}, &daemon.Status{UptimeSeconds: 2})
	var out strings.Builder
	w := statusWatcher{client: http.DefaultClient, base: base, out: &out, clear: true, interval: time.Millisecond}
	if err := w.run(context.Background(), 3, true); err != nil {
		t.Fatal(err)
	}
	frames := strings.Split(out.String(), "\x1b[H\x1b[2J")
	if len(frames) != 4 || frames[0] != "" {
		t.Fatalf("output is not 3 redraws:\n%q", out.String())
	}
	for _, f := range frames[1:] {
		if !strings.HasPrefix(f, "uiod at "+base.String()) {
			t.Errorf("redraw %q", f)
		}
	}
}
