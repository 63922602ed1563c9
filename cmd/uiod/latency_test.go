package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/latency/simrig"
	"github.com/uiod/uiod/wire"
)

func TestLatencyBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--size", "63"}, "--size"},
		{[]string{"--size", "9725"}, "--size"},
		{[]string{"--sim", "--timestamps", "hw", "--size", "2000"}, "--size"},
		{[]string{"--count", "-1"}, "--count"},
		{[]string{"--duration", "-1s"}, "--duration"},
		{[]string{"--timeout", "0s"}, "--timeout"},
		{[]string{"--interval", "0s"}, "--interval"},
		{[]string{"--spin", "-1us"}, "--spin"},
		{[]string{"--pattern", "square:1k"}, "--pattern"},
		{[]string{"--pattern", "poisson:1k", "--interval", "1ms"}, "--interval"},
		{[]string{"--load-rate", "lots"}, "--load-rate"},
		{[]string{"--load-size", "100"}, "--load-size"},
		{[]string{"--load-rate", "1k", "--load-size", "20"}, "--load-size"},
		{[]string{"--plot", "out.jpg"}, "--plot"},
		{[]string{"--plot", "png"}, "--plot"},
		{[]string{"--policies", "busy,nap"}, "--policies"},
		{[]string{"--policies", "sleep:200us-100us"}, "--policies"},
		{[]string{"--policies", "busy,busy"}, "--policies"},
		{[]string{"--policies", "busy+hk:100"}, "--policies"},
		{[]string{"--rx", "pair:a"}, "--rx"},
		{[]string{"--tx", "eth0"}, "--tx"},
		{[]string{"--tx", "pair:a", "--rx", "tap:"}, "--rx"},
		{[]string{"--tx", "pair:a", "--sim"}, "--sim"},
		{[]string{"--tx", "pair:a", "--policies", "busy"}, "--policies"},
		{[]string{"--tx", "pair:a", "--nic", "virtio"}, "--nic"},
		{[]string{"--sim", "--nic", "e1000"}, "--nic"},
		{[]string{"--nic", ""}, "--nic"},
		{[]string{"--bogus"}, "--bogus"},
		// Rates the generator cannot pace.
		{[]string{"--interval", "1ns"}, "--interval"},
		{[]string{"--interval", "999ns"}, "--interval"},
		{[]string{"--pattern", "constant:2Mpps"}, "--pattern"},
		{[]string{"--pattern", "poisson:5Mpps"}, "--pattern"},
		{[]string{"--load-rate", "2Mpps"}, "--load-rate"},
		{[]string{"--flows", "0"}, "--flows"},
		{[]string{"--flows", "70000"}, "--flows"},
		{[]string{"--timestamps", "ptp"}, "--timestamps"},
		{[]string{"--timestamps", "hw", "--tx", "pair:a"}, "--timestamps hw"},
		{[]string{"--timestamps", "hw", "--size", "64"}, "--size"},
		{[]string{"--ports", "0000:01:00.0"}, "--ports"},
		{[]string{"--ports", "0000:01:00.0,0000:01:00.0"}, "--ports"},
		{[]string{"--ports", "0000:01:00.0,nic2"}, "--ports"},
		{[]string{"--sim", "--ports", "0000:01:00.0,0000:02:00.0"}, "--ports"},
		// Outputs that cannot be written fail before anything is measured (the default
		// --sim run takes 24 s).
		{[]string{"--csv", "/nonexistent-dir/h.csv"}, "--csv"},
		{[]string{"--json", "/nonexistent-dir/r.json"}, "--json"},
		{[]string{"--plot", "/nonexistent-dir/p.png"}, "--plot"},
		{[]string{"--json", "/"}, "--json"},
		{[]string{"--tx", "pair:a", "--plot", "-"}, "--plot"},
		{[]string{"extra-arg"}, "extra-arg"},
		{[]string{"--tx", "pair:a", "--dst-mac", "01:00:5e:00:00:01"}, "--dst-mac"},
		{[]string{"--tx", "pair:a", "--dst-mac", "router"}, "--dst-mac"},
		{[]string{"--sim", "--dst-mac", "02:00:00:00:00:01"}, "--dst-mac"},
		{[]string{"--tx", "pair:a", "--dst-ip", "224.0.0.1"}, "--dst-ip"},
		{[]string{"--tx", "pair:a", "--dst-ip", "2001:db8::1"}, "--dst-ip"},
		{[]string{"--tx", "pair:a", "--dst-ip", "router"}, "--dst-ip"},
		{[]string{"--sim", "--dst-ip", "10.1.0.1"}, "--dst-ip"},
		// A bare `uiod latency` prints its usage: it names the three modes.
		{nil, "--sim"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"latency"}, tt.args...)
			if code := run(args); code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
			_, err := execUIOD(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Fatalf("error %v does not name %s", err, tt.flag)
			}
		})
	}
}

// TestLatencyOutputsAtomic checks that a run without a single sample writes its CSV and
// JSON, refuses to draw an empty plot, and leaves the previous plot file and no temporary
// file behind.
func TestLatencyOutputsAtomic(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath, plotPath := filepath.Join(dir, "h.csv"), filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg")
	if err := os.WriteFile(plotPath, []byte("<svg>previous</svg>"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Probes go out on one in-process wire and nothing comes back on the other.
	args := []string{"latency", "--tx", "pair:atomic-out", "--rx", "pair:atomic-back", "--count", "5", "--interval", "1ms",
		"--timeout", "20ms", "--csv", csvPath, "--json", jsonPath, "--plot", plotPath}
	_, err := execUIOD(t, args...)
	if err == nil || !strings.Contains(err.Error(), "--plot: "+plotPath+" not written") {
		t.Fatalf("error %v, want one saying the plot was not written", err)
	}
	if code := run(args); code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	// Without the plot the run still fails: every probe was lost, nothing was measured.
	noPlot := args[:len(args)-2]
	if _, err := execUIOD(t, noPlot...); err == nil || !strings.Contains(err.Error(), "no probe came back: 5 sent") {
		t.Errorf("every probe lost: error %v, want one saying no probe came back", err)
	}
	if code := run(noPlot); code != exitFailure {
		t.Errorf("every probe lost: exit %d, want %d", code, exitFailure)
	}
	if b, _ := os.ReadFile(plotPath); string(b) != "<svg>previous</svg>" {
		t.Errorf("plot file now holds %.60q", b)
	}
	var j map[string]any
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &j); err != nil || j["sent"] != 5.0 || j["received"] != 0.0 {
		t.Errorf("JSON %s: %v", data, err)
	}
	if b, _ := os.ReadFile(csvPath); string(b) != "latency,count\n" {
		t.Errorf("CSV %q", b)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 3 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v", names)
	}
}

func TestParsePolicies(t *testing.T) {
	ps, err := parsePolicies(defaultPolicies + ",adaptive:50us,threaded,busy+hk:100/10us")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]idle.PolicyConfig{
		"busy":                {Mode: idle.Busy},
		"adaptive":            {Mode: idle.Adaptive, IdleThreshold: idle.DefaultIdleThreshold},
		"auto":                {Mode: idle.Adaptive, Auto: true, IdleThreshold: idle.DefaultIdleThreshold},
		"sleep:100us-200us":   {Mode: idle.SleepRange, SleepMin: 100 * time.Microsecond, SleepMax: 200 * time.Microsecond},
		"adaptive:50us":       {Mode: idle.Adaptive, IdleThreshold: 50 * time.Microsecond},
		"threaded":            {Mode: idle.Adaptive, Delivery: idle.Threaded, IdleThreshold: idle.DefaultIdleThreshold},
		"busy+hk:100/10us":    {Mode: idle.Busy, HousekeepingHz: 100, HousekeepingLength: 10 * time.Microsecond},
		"sleep:1000us-1100us": {Mode: idle.SleepRange, SleepMin: time.Millisecond, SleepMax: 1100 * time.Microsecond},
	}
	for _, p := range ps {
		w, ok := want[p.name]
		// A spec leaves the wait bound at its default.
		w.WaitTimeout = idle.DefaultWaitTimeout
		if ok && p.cfg != w {
			t.Errorf("%s: %+v, want %+v", p.name, p.cfg, w)
		}
	}
	if len(ps) != 9 {
		t.Fatalf("%d policies", len(ps))
	}
}

func TestLatencyPairWire(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath, plotPath := filepath.Join(dir, "h.csv"), filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg")
	out, err := execUIOD(t, "latency", "--tx", "pair:cli-test", "--count", "300", "--interval", "100us",
		"--label", "mem", "--csv", csvPath, "--json", jsonPath, "--plot", plotPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "[mem] Samples: 300, Average: ") || !strings.Contains(out, "p99.9: ") {
		t.Fatalf("output %q", out)
	}
	// Below the MoonGen line, the table --sim prints, with the same latency columns in µs.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want the MoonGen line and a one-row table, got\n%s", out)
	}
	if h, want := strings.Fields(lines[1]), []string{"run", "samples", "p50(µs)", "p99(µs)", "max(µs)", "lost", "sent"}; !slices.Equal(h, want) {
		t.Errorf("table heading %q, want %q", h, want)
	}
	if row := strings.Fields(lines[2]); len(row) != 7 || row[0] != "mem" || row[1] != "300" || row[5] != "0" || row[6] != "300" {
		t.Errorf("table row %q, want mem with 300 samples, 0 lost of 300 sent", row)
	}
	f, _ := os.Open(csvPath)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 2 || rows[0][0] != "latency" || rows[0][1] != "count" {
		t.Fatalf("CSV %q, %v", rows, err)
	}
	var j map[string]any
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &j); err != nil || j["sent"] != 300.0 || j["received"] != 300.0 {
		t.Fatalf("JSON sent %v received %v: %v", j["sent"], j["received"], err)
	}
	if svg, _ := os.ReadFile(plotPath); !bytes.Contains(svg, []byte("<svg")) {
		t.Fatal("no SVG written")
	}
}

func TestLatencySim(t *testing.T) {
	dir := t.TempDir()
	jsonPath, csvPath, plotPath := filepath.Join(dir, "sim.json"), filepath.Join(dir, "sim.csv"), filepath.Join(dir, "sim.png")
	out, err := execUIOD(t, "latency", "--sim", "--duration", "1s", "--policies", "busy,adaptive,sleep:100us-200us",
		"--json", jsonPath, "--csv", csvPath, "--plot", plotPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	if strings.Contains(out, "n/a") {
		t.Error("a policy forwarded no probe, or was too short to measure CPU")
	}
	var rows []struct {
		Policy     string
		CPUPercent float64 `json:"cpu_percent"`
		Latency    struct{ Samples int }
	}
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 3 || rows[1].Policy != "adaptive" || rows[1].Latency.Samples == 0 {
		t.Errorf("JSON %+v, %v", rows, err)
	}
	if b, _ := os.ReadFile(csvPath); !bytes.HasPrefix(b, []byte("label,latency,count\nbusy,")) {
		t.Errorf("CSV starts %q", b[:min(len(b), 40)])
	}
	if b, _ := os.ReadFile(plotPath); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Error("no PNG written")
	}
	testutil.TextContains(t, "output", out, " busy  ", " adaptive  ", "sleep:100us-200us  ", "CPU%", "wakeups")
}

// TestLatencySimNIC runs `uiod latency --sim --nic NAME` on each kind of model port: the
// progress names no lost frame, every policy's probes come back, and the table is printed.
func TestLatencySimNIC(t *testing.T) {
	for _, name := range []string{"virtio", "igb"} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var g globals
			cmd := newRootCmd(&g)
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs([]string{"latency", "--sim", "--nic", name, "--duration", "300ms", "--policies", "busy,adaptive"})
			if err := cmd.Execute(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			out := stdout.String()
			t.Log("\n" + out + stderr.String())
			testutil.TextContains(t, "output", out, " busy  ", " adaptive  ", "CPU%", "wakeups")
			if strings.Contains(out, "n/a") {
				t.Error("a policy forwarded no probe, or was too short to measure CPU")
			}
			if strings.Contains(stderr.String(), "(port ") {
				t.Errorf("frames lost:\n%s", stderr.String())
			}
		})
	}
}

// TestLatencyUnixWires runs the generator against a forwarder on unix datagram wires, as
// against a `uiod run` with sim ports on unix wires or a QEMU guest.
func TestLatencyUnixWires(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	in, err := wire.ListenUnix(p("d_in"), p("g_tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := wire.ListenUnix(p("d_out"), p("g_rx"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in.SetHandler(func(f []byte, ts int64) { out.Send(f) })

	stdout, err := execUIOD(t, "latency",
		"--tx", "unix:"+p("g_tx")+","+p("d_in"), "--rx", "unix:"+p("g_rx")+","+p("d_out"),
		"--count", "200", "--interval", "200us", "--size", "1514")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "[unix:"+p("g_tx")+","+p("d_in")+"] Samples: 200,") {
		t.Fatalf("output %q", stdout)
	}
}

// pingCommand returns the argv prefix of a ping that works here, or nil.
func pingCommand() []string {
	if p, err := exec.LookPath("ping"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		return []string{p, "ping"}
	}
	return nil
}

// TestIntegrationTAPDemo is scripts/tap-demo.sh in-process: two network namespaces, each
// with a TAP interface that is the cable of one model 82599 port; the dataplane forwards
// between the ports, so the namespaces can ping each other through uiod.
func TestIntegrationTAPDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	ping := pingCommand()
	if ping == nil {
		t.Skip("no ping")
	}
	ipCmd := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var taps [2]wire.Port
	var nss [2]string
	for i := range taps {
		nss[i] = fmt.Sprintf("uiod-demo-%d-%d", os.Getpid(), i)
		name := fmt.Sprintf("uiodd%d%d", os.Getpid()%100000, i)
		tap, err := wire.OpenTAP(name)
		if err != nil {
			t.Skipf("tap: %v", err)
		}
		taps[i] = tap
		t.Cleanup(func() { tap.Close() })
		ipCmd("netns", "add", nss[i])
		ns := nss[i]
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		// The TAP keeps working after it moves: the file descriptor stays attached.
		ipCmd("link", "set", name, "netns", ns)
		ipCmd("-n", ns, "addr", "add", fmt.Sprintf("10.78.0.%d/24", i+1), "dev", name)
		ipCmd("-n", ns, "link", "set", name, "up")
		ipCmd("-n", ns, "link", "set", "lo", "up")
	}
	s, err := simrig.Open(taps)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dp, err := s.Forward(idle.PolicyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Stop()
	argv := append([]string{"netns", "exec", nss[0]}, append(ping, "-c", "3", "-W", "2", "10.78.0.2")...)
	out, err := exec.Command("ip", argv...).CombinedOutput()
	if err != nil {
		t.Errorf("port 0: %+v\nport 1: %+v\nlosses:%s\ndataplane: %+v", s.NICs[0].Stats(), s.NICs[1].Stats(), s.Drops(), dp.Stats())
		t.Fatalf("ping through uiod: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	var fwd uint64
	for _, q := range dp.Stats() {
		fwd += q.TxPackets
	}
	if fwd < 6 { // 3 echo requests + 3 replies, plus ARP
		t.Fatalf("dataplane forwarded %d frames", fwd)
	}
}

// Jumbo probes: --sim opens its model ports at an MTU that carries them, and every probe
// comes back; the generator's own NIC ports (--timestamps hw) send standard frames only.
func TestLatencyJumboProbes(t *testing.T) {
	for _, nicName := range []string{"ixgbe", "igb"} {
		stdout, stderr, err := execSplit(t, "latency", "--sim", "--nic", nicName, "--policies", "busy", "--count", "20", "--interval", "1ms", "--size", "9014")
		if err != nil {
			t.Fatalf("%s: %v\n%s", nicName, err, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if row := strings.Fields(lines[len(lines)-1]); len(row) < 3 || row[0] != "busy" || row[2] != "20" {
			t.Errorf("%s: 9014-byte probes: table\n%s\nwant busy with 20 samples", nicName, stdout)
		}
	}
	_, err := execUIOD(t, "latency", "--sim", "--timestamps", "hw", "--size", "4000", "--count", "5")
	if err == nil || !strings.Contains(err.Error(), "--size: 4000: at most 1514") {
		t.Errorf("--timestamps hw with 4000-byte probes: %v", err)
	}
}
