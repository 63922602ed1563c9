package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// TestIntegrationTimesync runs TestGuestTimesync: the igb driver's IEEE 1588 unit on two
// QEMU igb NICs wired to each other inside QEMU (a hub), on vfio-pci behind the emulated
// IOMMU, on the shared kernel.
func TestIntegrationTimesync(t *testing.T) { runTimesync(t, qemutest.SharedKernel) }

// TestIntegrationTimesyncDebian is TestIntegrationTimesync on Debian's kernel, whose igb
// module gives the Linux cross-check.
func TestIntegrationTimesyncDebian(t *testing.T) { runTimesync(t, qemutest.DebianKernel) }

// runTimesync boots the two-NIC hub guest on kernel and runs TestGuestTimesync.
func runTimesync(t *testing.T, kernel func() (qemutest.Kernel, error)) {
	vm := startGuest(t, kernel, qemutest.Options{
		IOMMU: true, NICs: 2, HubPairs: true, HugePages: 16, Timeout: 5 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_TIMESYNC", "^TestGuestTimesync$", 4*time.Minute),
	})
	finishGuest(t, vm)
}

// TestIntegrationTimesyncLatency runs testdata/timesync.sh: `uiod latency --ports
// --timestamps hw` on two igb on vfio-pci, through a `uiod run` l2fwd DUT on two more,
// each pair wired inside QEMU (hubs), under the busy, the adaptive and the auto policy
// (adaptive with idle_threshold auto, the default), in one boot. Each run
// must report device-clock figures beside the software ones, and the DUT must have
// measured the RX wait of the stamped probes.
func TestIntegrationTimesyncLatency(t *testing.T) {
	vm := startGuest(t, qemutest.SharedKernel, qemutest.Options{
		// The guest bench/dpdk's TestDPDKTimesync boots for testpmd: 2 vCPUs, TSC clock;
		// run in turn on one host thread, as with 2 MTTCG threads this guest's kernel lost
		// its timer interrupts (RCU stall) in 3 of 5 clean-clone runs on a loaded host.
		IOMMU: true, NICs: 4, HubPairs: true, CPUs: 2, SingleThread: true, Cmdline: []string{"tsc=reliable"},
		HugePages: 64, Memory: "2G", Timeout: 8 * time.Minute,
		Script: testdataScript(t, "timesync.sh"),
	})
	r := vm.Finish(t)
	r.RequireTagged(t, "TS")
	for _, pol := range timesyncPolicies {
		if !strings.Contains(r.Output, "TS latency "+pol+" ["+pol+" (device clock)] Samples: ") {
			t.Errorf("%s: no device-clock result", pol)
		}
		if !strings.Contains(r.Output, "TS STATUS "+pol+" \"port\":\"p0\",\"wake\":\"poll\",\"count\":") {
			t.Errorf("%s: the DUT has no rx wait histograms", pol)
		}
	}
}

// timesyncPolicies are the DUT policies testdata/timesync.sh runs by default.
var timesyncPolicies = []string{"busy", "adaptive", "auto"}

// relayDelay is the delay TestIntegrationTimesyncDelay's host relay adds.
const relayDelay = 4 * time.Millisecond

// TestIntegrationTimesyncDelay is the known-delay check: as TestIntegrationTimesyncLatency
// (adaptive DUT only), but NIC 1's frames reach NIC 2 through a host relay that holds each
// relayDelay, on the host's clock, which QEMU's virtual clock follows under TCG. Every
// device-clock sample must be at least that delay, less the clock error the run reports.
func TestIntegrationTimesyncDelay(t *testing.T) {
	vm := startGuest(t, qemutest.SharedKernel, qemutest.Options{
		IOMMU: true, NICs: 4, HubPairs: true, HubSkip: 1, HugePages: 32, Memory: "1G", Timeout: 8 * time.Minute,
		Script: "export UIOD_TS_POLICIES=adaptive\n" + testdataScript(t, "timesync.sh"),
	})
	in, err := wire.ListenUnix(vm.NICs[0].HostSocket, vm.NICs[0].GuestSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := wire.ListenUnix(vm.NICs[1].HostSocket, vm.NICs[1].GuestSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	type held struct {
		f  []byte
		at int64
	}
	q := make(chan held, 4096)
	in.SetHandler(func(f []byte, ts int64) {
		select {
		case q <- held{append([]byte(nil), f...), ts + int64(relayDelay)}:
		default: // a full queue drops, as a wire would
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for h := range q {
			if d := time.Duration(h.at - wire.Now()); d > 0 {
				time.Sleep(d)
			}
			out.Send(h.f)
		}
	}()
	r := vm.Finish(t)
	in.SetHandler(nil)
	close(q)
	<-done
	r.RequireTagged(t, "TS")
	var line string
	for _, l := range strings.Split(r.Output, "\n") {
		if strings.Contains(l, "(device clock)] min ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no device-clock line:\n%s", r.Output)
	}
	var minNs, offset, errNs int64
	rest := line[strings.Index(line, "] min ")+2:]
	if _, err := fmt.Sscanf(rest, "min %d ns, clock offset %d ns ± %d ns", &minNs, &offset, &errNs); err != nil {
		t.Fatalf("%q: %v", rest, err)
	}
	if minNs < int64(relayDelay)-errNs {
		t.Errorf("device-clock minimum %d ns is below the relay's %v (clock error ± %d ns)", minNs, relayDelay, errNs)
	}
	t.Logf("relay delay %v: device-clock minimum %d ns (± %d ns)", relayDelay, minNs, errNs)
}
