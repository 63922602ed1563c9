package integration

import (
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationRemovalSharedIOMMU: both igb NICs under uiod on vfio-pci with traffic
// from the host; the guest removes one through sysfs, which must not wait for uiod, and
// brings it back with a rescan (integration/guest/removal_test.go makes the assertions);
// then uiod run as a user without capabilities (unprivileged_test.go) and uiod vf on
// Linux's igb PF driver (vf_test.go).
// The host sends a frame into each NIC's wire every 20 ms for the whole boot and counts
// what the daemon reflects.
func TestIntegrationRemovalSharedIOMMU(t *testing.T) {
	pump := runPumped(t, qemutest.SharedKernel, qemutest.Options{IOMMU: true, HugePages: 32, Timeout: 5 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_REMOVAL", "^TestGuest(Removal|Unprivileged|VF)$", 4*time.Minute)}, 0, 2)
	for i := range 2 {
		t.Logf("NIC %d: host sent %d frames, %d reflected", i, pump.sent[i].Load(), pump.recv[i].Load())
	}
	if pump.recv[1].Load() == 0 {
		t.Error("no frame came back from the NIC that stayed: the daemon never forwarded")
	}
}

// TestIntegrationQuiesceDebianIOMMU: a uio_pci_generic port under traffic, its daemon
// killed with SIGKILL, then `uiod quiesce`: bus mastering off, and the frames the host
// keeps sending are no longer DMAed. The host sends a frame into NIC 2's wire every 20 ms
// for the whole boot and counts the frames the daemon reflects; the guest test
// (integration/guest/quiesce_test.go) makes the device-side assertions.
func TestIntegrationQuiesceDebianIOMMU(t *testing.T) {
	pump := runPumped(t, qemutest.DebianKernel, qemutest.Options{IOMMU: true, HugePages: 32, Timeout: 5 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_QUIESCE", "^TestGuestQuiesce", 4*time.Minute)}, 1, 2)
	t.Logf("host sent %d frames, %d reflected", pump.sent[0].Load(), pump.recv[0].Load())
	if pump.recv[0].Load() == 0 {
		t.Error("no frame came back: the daemon never forwarded, so DMA was never on")
	}
}
