package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// bridgeKernelModules are what bridge.TestKernelBridge needs of the Debian guest kernel:
// TAP ports for uiod's bridge, veth pairs into Linux's bridge (built with
// CONFIG_BRIDGE_VLAN_FILTERING, which the host's kernel may lack), and 802.1Q.
var bridgeKernelModules = []string{"tun", "veth", "bridge", "8021q"}

// TestIntegrationBridgeKernelGuest runs bridge.TestKernelBridge (uiod's bridge against
// Linux's, frame for frame, in network namespaces) in a Debian kernel guest, whose bridge
// has VLAN filtering: iproute2's ip and bridge come from the host with their libraries.
// Both subtests must pass there; the vlan one skipping (no VLAN filtering after all) fails
// this test, as does any subtest that skips.
func TestIntegrationBridgeKernelGuest(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	tools, err := qemutest.HostTools("ip", "bridge")
	if err != nil {
		t.Skip(err)
	}
	bin := qemutest.BuildTest(t, "./bridge")
	script := fmt.Sprintf(`/bin/ip -V; /bin/bridge -V
exec bridge.test -test.v -test.count=1 -test.timeout=%v -test.run '^TestKernelBridge$'
`, 6*time.Minute)
	vm := qemutest.Start(t, qemutest.Options{
		Kernel: k, NICs: 1, Modules: bridgeKernelModules, Timeout: 9 * time.Minute,
		Files:  append(tools, qemutest.Binary("bridge.test", bin)),
		Script: script,
	})
	r := vm.Finish(t)
	for _, l := range strings.Split(r.Rest, "\n") {
		if strings.Contains(l, " utility") { // iproute2's version lines
			t.Logf("guest: %s", l)
		}
	}
	r.Report(t)
	want := map[string]bool{"TestKernelBridge": false, "TestKernelBridge/untagged": false, "TestKernelBridge/vlan": false}
	for _, tr := range r.Tests {
		if _, ok := want[tr.Name]; !ok {
			continue
		}
		want[tr.Name] = true
		t.Logf("guest (%s): %s %s (%v)", r.Kernel, tr.Status, tr.Name, tr.Elapsed)
		if tr.Status != qemutest.Pass {
			t.Errorf("%s: %s in the guest, want PASS (a skip here means the comparison did not run)", tr.Name, tr.Status)
		}
	}
	for name, ran := range want {
		if !ran {
			t.Errorf("%s did not run in the guest; its output:\n%s", name, r.Output)
		}
	}
}
