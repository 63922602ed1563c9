package dpdk

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// timesyncDUTs are the DUTs TestDPDKTimesync measures, by their latency labels: testpmd,
// then uiod's l2fwd under each policy integration/testdata/timesync.sh runs.
var timesyncDUTs = []string{"testpmd", "busy", "adaptive", "auto"}

// TestDPDKTimesync measures DPDK's testpmd and uiod's l2fwd (busy, adaptive, auto) as the
// DUT on the NICs' own clocks, in one guest: four igb on two QEMU hubs, the DUT forwarding
// between NICs 2 and 3 and `uiod latency --ports --timestamps hw` driving NICs 1 and 4
// (timesync.sh for testpmd, then integration/testdata/timesync.sh for uiod). It is in
// make test: it skips under -short, without QEMU or root, or without Debian's dpdk.
func TestDPDKTimesync(t *testing.T) {
	testpmd := guestTestpmd(t)
	kernel, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	uiod := qemutest.BuildUIOD(t)
	var script []byte
	for _, f := range []string{"timesync.sh", "../../integration/testdata/timesync.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		script = append(append(script, b...), '\n')
	}
	vm := qemutest.Start(t, qemutest.Options{
		Kernel: kernel, IOMMU: true, CPUs: 2, Memory: "2G", HugePages: 512, NICs: 4, HubPairs: true,
		Cmdline: []string{"tsc=reliable"},
		Files:   guestFiles(t, uiod, testpmd, testpmd), // no l3fwd-power here: testpmd stands in
		Script:  string(script), Timeout: 10 * time.Minute,
	})
	r := vm.Finish(t)
	r.RequireTagged(t, "TS")
	for _, dut := range timesyncDUTs {
		if !strings.Contains(r.Output, "["+dut+" (device clock)] Samples: ") {
			t.Errorf("%s: no device-clock result", dut)
		}
	}
}
