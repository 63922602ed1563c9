package integration

import (
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationTimesyncLinux runs TestGuestTimesyncLinux on Debian's kernel: two QEMU
// igb on one hub, one on Linux's igb driver with hardware timestamping (its PHC, an
// AF_PACKET socket with SO_TIMESTAMPING), the other on vfio-pci under uiod, PTP frames
// stamped both ways and every stamp pair checked against the offset of the two clocks.
func TestIntegrationTimesyncLinux(t *testing.T) {
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICs: 2, HubPairs: true, HugePages: 16, Timeout: 5 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_TIMESYNC_LINUX", "^TestGuestTimesyncLinux$", 4*time.Minute),
	})
	finishGuest(t, vm)
}
