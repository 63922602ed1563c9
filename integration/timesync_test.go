package integration

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// TestIntegrationTimesync runs TestGuestTimesync: the igb driver's IEEE 1588 unit on two
// QEMU igb NICs wired to each other inside QEMU (a hub), on vfio-pci behind the emulated
// IOMMU, on the shared kernel.
func TestIntegrationTimesync(t *testing.T) {
	vm := startGuest(t, qemutest.SharedKernel, qemutest.Options{
		IOMMU: true, NICs: 2, HubPairs: true, HugePages: 16, Timeout: 5 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_TIMESYNC", "^TestGuestTimesync$", 4*time.Minute),
	})
	finishGuest(t, vm)
}
