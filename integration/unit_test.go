package integration

import (
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationUnitDebianIOMMU: the shipped systemd unit's bind → run → stop → restore
// path in the guest. The guest gets contrib/uiod.service where the package installs it and
// runs its ExecStartPre=, ExecStart= and ExecStopPost= lines in order (see
// TestGuestUnitBindRunRestore) with a configuration that puts NIC 1 on vfio-pci and NIC 2
// on uio_pci_generic, forwarding between them. The host sends a frame into each NIC every
// 20 ms for the whole boot and counts the frames the daemon forwards out of the other NIC.
func TestIntegrationUnitDebianIOMMU(t *testing.T) {
	pump := runPumped(t, qemutest.DebianKernel, qemutest.Options{IOMMU: true, HugePages: 32, Timeout: 5 * time.Minute,
		Files:  []qemutest.Entry{qemutest.File("lib/systemd/system/uiod.service", "../contrib/uiod.service")},
		Script: guestTestScript("UIOD_GUEST_UNIT", "^TestGuestUnit", 4*time.Minute)}, 0, 2)
	// Frames sent into NIC i that left the other NIC.
	forwarded := [2]int64{pump.from[1][0].Load(), pump.from[0][1].Load()}
	t.Logf("host sent %d/%d frames into NIC 1/2, %d/%d forwarded out of the other",
		pump.sent[0].Load(), pump.sent[1].Load(), forwarded[0], forwarded[1])
	for i := range forwarded {
		if forwarded[i] == 0 {
			t.Errorf("no frame sent into NIC %d came out of NIC %d: the daemon the unit started did not forward", i+1, 2-i)
		}
	}
}
