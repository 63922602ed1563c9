package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/uiod/uiod/config"
)

// testConfig parses y as the configuration of an in-process test daemon. Whatever y says,
// the metrics endpoint listens on an ephemeral loopback port (never the fixed default a
// config without a metrics section gets) and state_dir is a fresh temporary directory.
func testConfig(t testing.TB, y string) *config.Config {
	t.Helper()
	cfg, err := config.Read(strings.NewReader(y))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Metrics.Listen = "127.0.0.1:0"
	cfg.StateDir = t.TempDir()
	return cfg
}

// simConfig returns a two-port sim configuration whose wires are the pairs NAME0 and
// NAME1, forwarding between them, under the given poll mode (extra is appended to the
// poll section).
func simConfig(t testing.TB, name, mode, extra string) *config.Config {
	t.Helper()
	return testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", promiscuous: true}
  - {name: b, driver: sim, wire: "pair:%[1]s1", promiscuous: true}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: %[2]s, wait_timeout: 5ms %[3]s}
`, name, mode, extra))
}

// simNICConfig is simConfig's two ports on device models of NIC driver nic, in adaptive
// mode; portExtra is appended to each port's fields. The ports are promiscuous but for
// igbvf's (a VF takes broadcast, not promiscuous mode).
func simNICConfig(t testing.TB, name, nic, portExtra string) *config.Config {
	t.Helper()
	return testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, nic: %[2]s, wire: "pair:%[1]s0", promiscuous: %[3]t%[4]s}
  - {name: b, driver: sim, nic: %[2]s, wire: "pair:%[1]s1", promiscuous: %[3]t%[4]s}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: adaptive, wait_timeout: 5ms}
`, name, nic, nic != "igbvf", portExtra))
}

// startDaemon starts a daemon for cfg, stops it when the test ends, and returns it with
// the base URL of its metrics endpoint as read back from the listener.
func startDaemon(t testing.TB, cfg *config.Config) (*Daemon, string) {
	t.Helper()
	d := New(cfg, Options{})
	if err := d.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { d.Stop() })
	addr := d.MetricsAddr()
	if addr == "" {
		t.Fatal("metrics endpoint not running")
	}
	return d, "http://" + addr
}
