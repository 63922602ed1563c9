package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/testrig/qemutest"
)

// The multi-queue test. One guest boot runs two scenarios in turn (testdata/multiqueue.sh),
// each with both NICs on one driver and `uiod run` forwarding between them (l2fwd, adaptive
// idle policy, 4 RX and 4 TX queues per port, RSS):
//
//   - vfio-pci: MSI-X, one vector per RX queue; two poll threads pinned to the guest's two
//     vCPUs, the queues dealt out between them;
//   - uio_pci_generic: INTx, one line per NIC for all its queues; one poll thread.
//
// The host sends UDP flows that differ in their source port (flows_test.go) into one NIC
// and receives them from the other, at most mqWindow frames in flight so that no ring can
// overflow. After each run of frames the guest prints its interrupt counts and the daemon's
// /status. Each scenario has these runs, each way (nic1 → nic2, nic2 → nic1):
//
//   - spread: mqSpreadFlows flows. Every frame comes back once and in its flow's order,
//     and every RX queue of the receiving port got exactly the frames of the flows the
//     Toeplitz hash of the driver's key sends to it (igb.RSSKey, redirection table entry
//     i → queue i mod 4, indexed by the hash's low 7 bits), which are all four queues.
//   - queue q, for each q: only flows that hash to queue q. Only that queue receives;
//     only its interrupt fires (vfio: its own MSI-X vector; uio: its NIC's INTx line);
//     the poll thread that owns it sleeps and wakes by that interrupt at least once
//     (it was idle when the run began), never more often than the interrupt fired; and
//     the other thread (vfio) is never woken by an interrupt. So each vector fires, and
//     each thread sleeps and wakes on its own queues' vectors only.
//
// Counts that depend on the machine's load (how many frames found a thread asleep) are
// logged, not asserted.
//
// The guest is booted (qemutest, logged in full by the test) as
//
//	qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512M -smp 2 -nodefaults
//	  -device intel-iommu,intremap=on
//	  -netdev dgram,id=nN,local.type=unix,local.path=…,remote.type=unix,remote.path=…
//	  -device pcie-root-port,id=rpN,bus=pcie.0,chassis=N+1,slot=N+1
//	  -device igb,bus=rpN,netdev=nN,mac=52:54:00:12:34:5x     (N = 0, 1)
//	  -kernel vmlinuz -initrd … -append "console=ttyS0 panic=-1 no_timer_check
//	    intel_iommu=on iommu=pt hugepagesz=2M hugepages=64 tsc=reliable …"
//
// on Debian's kernel (vfio-pci, vfio_iommu_type1, uio_pci_generic as modules).

const (
	// mqQueues is the number of RX and TX queues of each port.
	mqQueues = 4
	// mqSpreadFlows flows go through a spread run, mqSpreadFrames frames each.
	mqSpreadFlows  = 64
	mqSpreadFrames = 4
	// A queue run sends mqQueueFlows flows of the queue, mqQueueFrames frames each.
	mqQueueFlows  = 4
	mqQueueFrames = 4
	// mqWindow frames at most are in flight: far fewer than the 128-descriptor rings.
	mqWindow = 16
	// mqIdle is how long the host waits for a frame to come back before it gives up.
	mqIdle = 30 * time.Second
)

// mqScenario is one driver's configuration in the guest script.
type mqScenario struct {
	driver  string
	threads []int // the poll threads' CPUs
	msix    bool  // one MSI-X vector per queue, else one INTx line per NIC
}

var mqScenarios = []mqScenario{
	{driver: "vfio-pci", threads: []int{0, 1}, msix: true},
	{driver: "uio_pci_generic", threads: []int{0}},
}

// mqRun is one run of flows: into NIC in, out of NIC out; queue is the RX queue all its
// flows hash to, or -1 for a spread run.
type mqRun struct {
	name    string // the snapshot's name, <driver>/<run>
	in, out int
	queue   int
	flows   []int
	perFlow int
	res     flowResult
	err     error
	done    bool
}

// rssQueue is the RX queue the driver's RSS set-up sends a hash to: its redirection table
// has entry i → queue i mod n, indexed by the hash's low 7 bits.
func rssQueue(hash uint32, n int) int { return int(hash&127) % n }

// flowQueue returns the RX queue flow f lands on.
func flowQueue(f int) int { return rssQueue(flowHash(igb.RSSKey[:], f), mqQueues) }

// mqRuns returns a scenario's runs in order.
func mqRuns(driver string) []*mqRun {
	var runs []*mqRun
	spread := make([]int, mqSpreadFlows)
	for f := range spread {
		spread[f] = f
	}
	for _, d := range []struct{ in, out int }{{0, 1}, {1, 0}} {
		runs = append(runs, &mqRun{name: fmt.Sprintf("%s/spread-nic%d", driver, d.in+1),
			in: d.in, out: d.out, queue: -1, flows: spread, perFlow: mqSpreadFrames})
	}
	for _, d := range []struct{ in, out int }{{0, 1}, {1, 0}} {
		for q := 0; q < mqQueues; q++ {
			var flows []int
			for f := 0; len(flows) < mqQueueFlows; f++ {
				if flowQueue(f) == q {
					flows = append(flows, f)
				}
			}
			runs = append(runs, &mqRun{name: fmt.Sprintf("%s/nic%d-queue%d", driver, d.in+1, q),
				in: d.in, out: d.out, queue: q, flows: flows, perFlow: mqQueueFrames})
		}
	}
	return runs
}

// TestIntegrationMultiQueue runs the multi-queue scenarios (see above) in one guest.
func TestIntegrationMultiQueue(t *testing.T) {
	// The spread runs must reach every queue, or they prove nothing.
	hit := map[int]bool{}
	for f := 0; f < mqSpreadFlows; f++ {
		hit[flowQueue(f)] = true
	}
	if len(hit) != mqQueues {
		t.Fatalf("the %d flows hash to queues %v only", mqSpreadFlows, hit)
	}
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		// The vCPUs in turn on one host thread: with one each, QEMU 10 aborted here on
		// its softmmu race with vfio's memory-map changes (iotlb_to_section).
		IOMMU: true, CPUs: 2, SingleThread: true, HugePages: 64,
		// Without it a 2-vCPU TCG guest may fall back to the HPET clock and stall.
		Cmdline: []string{"tsc=reliable"},
		Script:  testdataScript(t, "multiqueue.sh"),
		Timeout: 10 * time.Minute,
	})
	t.Logf("guest: %s", strings.Join(vm.Args(), " "))
	link, err := openFlowLink(vm.NICs)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()

	runs := map[string][]*mqRun{}
	phase := uint32(0)
	host := time.Now()
scenarios:
	for _, sc := range mqScenarios {
		if _, err := vm.WaitOutput("E2E READY "+sc.driver, 5*time.Minute); err != nil {
			t.Errorf("guest not ready for %s: %v", sc.driver, err)
			break
		}
		runs[sc.driver] = mqRuns(sc.driver)
		for _, r := range runs[sc.driver] {
			phase++
			r.res, r.err = link.run(phase, r.in, r.out, r.flows, r.perFlow, mqWindow, mqIdle)
			r.done = true
			if err := takeSnapshot(vm, r.name); err != nil {
				t.Error(err)
				break scenarios
			}
		}
		if err := vm.Send(sc.driver + "/done"); err != nil {
			t.Errorf("tell the guest to stop %s: %v", sc.driver, err)
			break
		}
	}
	t.Logf("host side %v", time.Since(host).Round(time.Millisecond))
	res, rep := finishE2E(t, vm)
	if len(res.NICs) < 2 {
		t.Fatalf("guest NICs %q, want two", res.NICs)
	}
	for _, sc := range mqScenarios {
		t.Run(sc.driver, func(t *testing.T) {
			checkScenario(t, sc, res.NICs, res.Output, rep, runs[sc.driver])
		})
	}
}
