package main

import (
	"strings"
	"testing"

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
