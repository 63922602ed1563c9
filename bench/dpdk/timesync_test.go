package dpdk

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// TestDPDKTimesync measures DPDK's testpmd as the DUT on the NICs' own clocks: one guest,
// four igb on two QEMU hubs, testpmd forwarding between NICs 2 and 3 and `uiod latency
// --ports --timestamps hw` driving NICs 1 and 4 (timesync.sh). It runs by hand, with
// UIOD_DPDK_TIMESYNC=1, as root with Debian's dpdk installed.
func TestDPDKTimesync(t *testing.T) {
	if os.Getenv("UIOD_DPDK_TIMESYNC") != "1" {
		t.Skip("runs by hand: UIOD_DPDK_TIMESYNC=1 go test -run TestDPDKTimesync ./bench/dpdk/")
	}
	qemutest.Require(t)
	testpmd := testpmdPath(t)
	kernel, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	uiod := qemutest.BuildUIOD(t)
	script, err := os.ReadFile("timesync.sh")
	if err != nil {
		t.Fatal(err)
	}
	vm := qemutest.Start(t, qemutest.Options{
		Kernel: kernel, IOMMU: true, CPUs: 2, Memory: "2G", HugePages: 512, NICs: 4, HubPairs: true,
		Cmdline: []string{"tsc=reliable"},
		Files:   guestFiles(t, uiod, testpmd, testpmd), // no l3fwd-power here: testpmd stands in
		Script:  string(script), Timeout: 10 * time.Minute,
	})
	r := vm.Finish(t)
	r.RequireTagged(t, "TS")
	if !strings.Contains(r.Output, "[testpmd (device clock)] Samples: ") {
		t.Error("no device-clock result")
	}
}
