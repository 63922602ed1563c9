package main

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
)

// TestConfigExampleBridge: uiod config example --bridge prints the bridge example, which
// validates; --l3fwd with --bridge is a usage error.
func TestConfigExampleBridge(t *testing.T) {
	ex, stderr, code := runUIOD(t, "", nil, "config", "example", "--bridge")
	if code != 0 || !strings.Contains(ex, "mode: bridge") || !strings.Contains(ex, "vlans: [10, 20]") {
		t.Fatalf("config example --bridge: exit %d, output %q, stderr %q", code, ex, stderr)
	}
	if out, stderr, code := runUIOD(t, ex, nil, "config", "validate", "-"); code != 0 || !strings.Contains(out, "<stdin>: ok") {
		t.Errorf("the bridge example does not validate: exit %d, %s%s", code, out, stderr)
	}
	if _, stderr, code := runUIOD(t, "", nil, "config", "example", "--bridge", "--l3fwd"); code != 2 || !strings.Contains(stderr, "choose one") {
		t.Errorf("--bridge --l3fwd: exit %d, stderr %q; want 2", code, stderr)
	}
}

// TestStatusBridge: uiod status of a daemon running the bridge ends with the bridge's
// table of ports, which fits 80 columns; --json carries it too.
func TestStatusBridge(t *testing.T) {
	st := &daemon.Status{Uptime: "1m0s", UptimeSeconds: 60, Policy: daemon.PolicyStatus{Mode: "adaptive", IdleThreshold: "300µs", IdleThresholdSeconds: ptr(300e-6), WaitTimeout: "100ms", WaitTimeoutSeconds: 0.1, App: "bridge"},
		Ports:   []daemon.PortStatus{{Name: "vm0", PCI: "vhost", NIC: "vhost-user", LinkUp: true}, {Name: "uplink", PCI: "0000:81:00.0", NIC: "ixgbe", LinkUp: true}},
		Queues:  []daemon.QueueStatus{{Name: "vm0/rx0"}, {Name: "uplink/rx0"}},
		Threads: []daemon.ThreadStatus{{Index: 0, CPU: -1, State: "sleeping", Threshold: "300µs", ThresholdSeconds: 300e-6}},
		Bridge: &daemon.BridgeStatus{Ageing: "5m0s", Entries: 3, Ports: []daemon.BridgePortStatus{
			{Name: "vm0", Entries: 1, Learned: 12, Flooded: 1234567, Dropped: 3},
			{Name: "uplink", Entries: 2, Learned: 2, Moved: 1, Refused: 4, FloodLimited: 9, Dropped: 9}}}}
	u := fakeDaemon(t, st, st)
	out, err := execUIOD(t, "status", "--metrics", u.String(), "--interval", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, out, statusWidth)
	for _, w := range []string{"bridge: 3 MACs, ageing 5m0s", "LEARNED", "1234567", "uplink"} {
		if !strings.Contains(out, w) {
			t.Errorf("uiod status lacks %q:\n%s", w, out)
		}
	}
	out, err = execUIOD(t, "status", "--metrics", u.String(), "--interval", "10ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"flood_limited": 9`) && !strings.Contains(out, `"flood_limited":9`) {
		t.Errorf("uiod status --json lacks the bridge's counters:\n%s", out)
	}
}

// TestConfigExampleRouter: uiod config example --router prints a two-port router whose
// routes come from the kernel, both ports with a TAP, which validates and says what its
// tables may take; the help lists it; it cannot be combined with another example.
func TestConfigExampleRouter(t *testing.T) {
	ex, stderr, code := runUIOD(t, "", nil, "config", "example", "--router")
	if code != 0 || !strings.Contains(ex, "routes_from: kernel") || strings.Count(ex, "kernel: {tap: uiodk") != 2 || !strings.Contains(ex, "max_routes: 1048576") {
		t.Fatalf("config example --router: exit %d, output %q, stderr %q", code, ex, stderr)
	}
	out, stderr, code := runUIOD(t, ex, nil, "config", "validate", "-")
	if code != 0 || !strings.Contains(out, "<stdin>: ok") || !strings.Contains(out, "two generations live at once") {
		t.Errorf("the router example does not validate: exit %d, %s%s", code, out, stderr)
	}
	if help, _, _ := runUIOD(t, "", nil, "config", "example", "--help"); !strings.Contains(help, "--router") || !strings.Contains(help, "config example --router") {
		t.Errorf("config example --help does not list --router:\n%s", help)
	}
	for _, args := range [][]string{{"--router", "--l3fwd"}, {"--router", "--bridge"}} {
		if _, stderr, code := runUIOD(t, "", nil, append([]string{"config", "example"}, args...)...); code != 2 || !strings.Contains(stderr, "choose one") {
			t.Errorf("%v: exit %d, stderr %q; want 2", args, code, stderr)
		}
	}
}

// TestConfigValidateRouteTables: config validate prints what l3fwd's tables may take at
// forward.max_routes and max_routes6 (one generation with static routes, two during an
// update from the kernel), nothing for other modes, and refuses static routes over the
// limit with exit 2 naming forward.routes and the limit.
func TestConfigValidateRouteTables(t *testing.T) {
	l3 := config.ExampleL3fwd()
	small := strings.Replace(l3, "  routes_from: static\n", "  routes_from: static\n  max_routes: 1000\n  max_routes6: 100\n", 1)
	out, stderr, code := runUIOD(t, small, nil, "config", "validate", "-")
	for _, w := range []string{"l3fwd tables at forward.max_routes 1000 and max_routes6 100:", "first level 66 MiB", "groups up to 1000 KiB",
		"groups up to 400 KiB with routes of /48 or shorter", "1.4 MiB with longer ones", "one generation"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("validate: exit %d, output lacks %q:\n%s%s", code, w, out, stderr)
		}
	}
	if out, _, _ := runUIOD(t, config.Example(), nil, "config", "validate", "-"); strings.Contains(out, "l3fwd tables") {
		t.Errorf("the l2fwd example prints l3fwd tables:\n%s", out)
	}
	over := strings.Replace(l3, "  routes_from: static\n", "  routes_from: static\n  max_routes: 1\n", 1)
	if _, stderr, code := runUIOD(t, over, nil, "config", "validate", "-"); code != 2 || !strings.Contains(stderr, "forward.routes") || !strings.Contains(stderr, "over forward.max_routes (1)") {
		t.Errorf("static routes over max_routes: exit %d, stderr %q; want 2", code, stderr)
	}
}
