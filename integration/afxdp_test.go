package integration

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// afxdpModules are the guest modules for QEMU's igb and virtio-net-pci on their kernel
// drivers, each after its dependencies.
var afxdpModules = append(slices.Clone(qemutest.DefaultModules),
	"virtio", "virtio_ring", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net")

// TestIntegrationAFXDPGuest runs af_xdp ports in a real kernel (Debian's) on QEMU's igb
// and virtio-net-pci, both left on their kernel drivers: testdata/afxdp.sh forwards l2fwd
// between them, and the host probes through the guest both ways with uiod latency; once
// the daemon stopped neither interface keeps an XDP program.
func TestIntegrationAFXDPGuest(t *testing.T) {
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		NICs: 2, NICModels: []string{"igb", "virtio"}, Timeout: 10 * time.Minute,
		Modules: afxdpModules,
		Script:  testdataScript(t, "afxdp.sh"),
	})
	if _, err := vm.WaitOutput("E2E READY", 6*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name    string
		in, out int
	}{{"igb-to-virtio", 0, 1}, {"virtio-to-igb", 1, 0}} {
		out, rep, err := qemutest.Latency(binaries.uiod, vm.NICs[d.in], vm.NICs[d.out], t.TempDir(), d.name, 3*time.Minute,
			"--count", strconv.Itoa(200), "--interval", "5ms", "--timeout", "1s")
		if err != nil {
			t.Errorf("uiod latency %s: %v", d.name, err)
			continue
		}
		t.Log(out)
		if rep.Received < rep.Sent*9/10 {
			t.Errorf("%s: %d of %d probes back through the af_xdp ports", d.name, rep.Received, rep.Sent)
		}
	}
	res, rep := doneE2E(t, vm)
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.Contains(l, "E2E ifaces") || strings.Contains(l, "E2E devices") || strings.Contains(l, `"attach"`) {
			t.Log(l)
		}
	}
	attached := 0
	for _, l := range rep.log {
		if strings.Contains(l, "af_xdp") && strings.Contains(l, `"attach"`) {
			attached++
		}
	}
	if attached != 2 {
		t.Errorf("the daemon's log says %d af_xdp ports attached, want 2:\n%s", attached, strings.Join(rep.log, "\n"))
	}
	if !strings.Contains(res.Output, "drv=igb") || !strings.Contains(res.Output, "drv=virtio_net") {
		t.Errorf("uiod devices --interfaces in the guest did not list the igb and virtio_net interfaces")
	}
}
