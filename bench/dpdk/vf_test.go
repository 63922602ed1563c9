package dpdk

import (
	"os"
	"testing"
)

// vfForwarders are what runs on the VFs: uiod's l2fwd with adaptive, and DPDK's
// l3fwd-power (--interrupt-only: DPDK 22.11's igbvf PMD serves it, the issue expected it
// not to) and testpmd (busy polling, io forwarding), both through librte_net_e1000's igbvf
// PMD; testpmd last, so that the others are measured when it does not get ready.
var vfForwarders = []string{"uiod-adaptive", "l3fwd-power", "testpmd"}

// TestIntegrationVFSideBySide boots one guest (the Debian kernel, intel-iommu) whose two
// QEMU igb NICs are Linux igb PFs with one VF each, the VFs on vfio-pci, and measures
// testpmd, l3fwd-power and uiod (nic: igbvf, adaptive) on the same two VFs in turn with
// the host's probes. make test runs one round of 1000 probes; with UIOD_DPDK_BENCH=1 the
// rounds and probes of the -dpdk flags. testpmd and uiod must bring probes back; what
// l3fwd-power does is logged (its log is printed as FWLOG lines when it stops).
func TestIntegrationVFSideBySide(t *testing.T) {
	testpmd, l3fwd := integrationDPDK(t)
	n, count := 1, 1000
	if os.Getenv("UIOD_DPDK_BENCH") == "1" {
		n, count = flags.Rounds(), flags.Probes()
	}
	runs := measureAll(t, testpmd, l3fwd, true, vfForwarders, n, count, 0)
	if len(runs) != n*len(vfForwarders) {
		t.Errorf("%d runs measured, want %d", len(runs), n*len(vfForwarders))
	}
	for _, r := range runs {
		if r.name != "l3fwd-power" && (r.latencyErr != "" || r.lat.Received == 0) {
			t.Errorf("%s on the VFs forwarded no probe back: %s", r.name, r.latencyErr)
		}
		if r.name == "l3fwd-power" {
			t.Logf("l3fwd-power on the VFs: %d of %d probes back, CPU %.1f %% probed, %.1f %% idle", r.lat.Received, r.lat.Sent, r.probeCPU, r.idleCPU)
		}
	}
	report(t, runs)
}
