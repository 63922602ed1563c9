package integration

import (
	"strings"
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

// TestIntegrationTimesyncLatency runs testdata/timesync.sh: `uiod latency --ports
// --timestamps hw` on two igb on vfio-pci, through a `uiod run` l2fwd DUT on two more,
// each pair wired inside QEMU (hubs), under the busy and the adaptive policy. Each run
// must report device-clock figures beside the software ones, and the DUT must have
// measured the RX wait of the stamped probes.
func TestIntegrationTimesyncLatency(t *testing.T) {
	vm := startGuest(t, qemutest.SharedKernel, qemutest.Options{
		IOMMU: true, NICs: 4, HubPairs: true, HugePages: 32, Memory: "1G", Timeout: 8 * time.Minute,
		Script: testdataScript(t, "timesync.sh"),
	})
	r := vm.Finish(t)
	for _, l := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(l, "TS ") {
			t.Log(l)
		}
	}
	if r.Exit != 0 || !strings.Contains(r.Output, "TS done") {
		t.Fatalf("guest script exit %d:\n%s", r.Exit, r.Output)
	}
	for _, pol := range []string{"busy", "adaptive"} {
		if !strings.Contains(r.Output, "TS latency "+pol+" ["+pol+" (device clock)] Samples: ") {
			t.Errorf("%s: no device-clock result", pol)
		}
		if !strings.Contains(r.Output, "TS STATUS "+pol+" \"port\":\"p0\",\"wake\":\"poll\",\"count\":") {
			t.Errorf("%s: the DUT has no rx wait histograms", pol)
		}
	}
}
