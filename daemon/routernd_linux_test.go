package daemon

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestIntegrationRouterNDWithoutPromiscuous: a router as `uiod config example --router`
// builds it — l3fwd with routes from the kernel and a TAP on each port — on sim ports
// that are not promiscuous. A host on port a resolves the router's IPv6 address (its
// neighbour solicitation goes to the address's solicited-node group, which only the
// kernel joined, on the TAP) and pings it. That works only because the port's receive
// filter follows the groups the kernel joins on the TAP (docs/design.md, "The TAP
// follows its port"): with the filter left as Open programs it (broadcast and the
// port's own MAC), the solicitation never gets past the port.
func TestIntegrationRouterNDWithoutPromiscuous(t *testing.T) {
	needTUN(t)
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	ns, host := testutil.Netns(t, "uiod-nd"), testutil.Netns(t, "uiod-ndh")
	cfg := testConfig(t, `
ports:
  - {name: a, driver: sim, wire: "tap:uiodnd0", kernel: {tap: uiodndk0}}
  - {name: b, driver: sim, wire: "tap:uiodnd1", kernel: {tap: uiodndk1}}
forward: {mode: l3fwd, routes_from: kernel}
poll: {mode: adaptive, idle_threshold: 300us, wait_timeout: 10ms}
`)
	if cfg.Ports[0].Promiscuous {
		t.Fatal("the test's port a is promiscuous: it would prove nothing")
	}
	d, _ := startIn(t, cfg, ns, nil)
	// The wire's TAP, made by Start in ns, is the host's interface.
	testutil.IPIn(t, ns, "link", "set", "uiodnd0", "netns", host)
	testutil.IPIn(t, host, "link", "set", "uiodnd0", "up")
	testutil.IPIn(t, host, "addr", "add", "2001:db8:71::2/64", "dev", "uiodnd0", "nodad")
	testutil.IPIn(t, ns, "addr", "add", "2001:db8:71::1/64", "dev", "uiodndk0", "nodad")

	// The port's filter follows the TAP's groups (the kernel joined ff02::1:ff00:1 there
	// for 2001:db8:71::1: 33:33:ff:00:00:01).
	testutil.Eventually(t, 10*time.Second, func() bool {
		k := d.Status().Ports[0].Kernel
		return k != nil && k.Follow != nil && k.Follow.FilterFollows && k.Follow.Groups > 0
	}, "the port's filter never took the TAP's groups: %+v", d.Status().Ports[0].Kernel)

	var out []byte
	ok := testutil.Eventually(t, 20*time.Second, func() bool {
		var err error
		out, err = exec.Command("ip", "netns", "exec", host, "ping", "-6", "-c", "1", "-W", "1", "2001:db8:71::1").CombinedOutput()
		return err == nil
	}, "the host never reached the router's IPv6 address through a non-promiscuous port")
	if !ok {
		neigh, _ := exec.Command("ip", "netns", "exec", host, "ip", "-6", "neigh", "show", "dev", "uiodnd0").CombinedOutput()
		t.Fatalf("last ping:\n%s\nthe host's neighbours:\n%s", out, neigh)
	}
	neigh, err := exec.Command("ip", "netns", "exec", host, "ip", "-6", "neigh", "show", "2001:db8:71::1", "dev", "uiodnd0").CombinedOutput()
	if err != nil || !strings.Contains(string(neigh), d.ports[0].nic.MAC().String()) {
		t.Errorf("the host resolved the router to %q (%v), want port a's MAC %s", neigh, err, d.ports[0].nic.MAC())
	}
}
