package dpdk

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/testrig/sidebyside"
)

var (
	flags    = sidebyside.NewFlags(sidebyside.FlagSet{Prefix: "dpdk", Rounds: 2, One: "forwarder", Subset: "forwarders", Many: "forwarders"})
	burst    = flag.Int("dpdk.burst", 20000, "probes of the burst after the idle stretch, 10 µs apart (0: no burst)")
	burstGap = flag.Duration("dpdk.burst-gap", 10*time.Microsecond, "gap between the burst's probes")
	rates    = flag.String("dpdk.rates", "", "comma-separated probe rates in kpps for a rate sweep (default: one rate, 1/-dpdk.interval)")
)

// forwarders are measured in this order in the first round, rotated by one each round.
var forwarders = []string{"testpmd", "l3fwd-power", "uiod-busy", "uiod-adaptive", "uiod-auto", "uiod-l3fwd-adaptive", "uiod-l3fwd-auto", "uiod-busy-noyield"}

// pmdDir is where Debian's EAL looks for its driver plugins.
const pmdDir = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0"

// pmds are the plugins the guest needs: the PCI bus, the ring mempool and the igb PMD, by
// the names EAL loads from its plugin directory (it takes *.so there).
var pmds = []string{"librte_bus_pci.so", "librte_bus_vdev.so", "librte_mempool_ring.so", "librte_net_e1000.so"}

// TestDPDKSideBySide boots one guest with two igb NICs on vfio-pci and measures each
// forwarder in turn with the host's probes from NIC 0 to NIC 1. It runs only with
// UIOD_DPDK_BENCH=1 and UIOD_L3FWD_POWER naming a built l3fwd-power (run.sh sets both).
func TestDPDKSideBySide(t *testing.T) {
	if os.Getenv("UIOD_DPDK_BENCH") != "1" {
		t.Skip("the DPDK side-by-side benchmark runs by hand: bench/dpdk/run.sh")
	}
	qemutest.Require(t)
	testpmd := testpmdPath(t)
	l3fwd := os.Getenv("UIOD_L3FWD_POWER")
	if l3fwd == "" {
		t.Fatal("UIOD_L3FWD_POWER must name the built l3fwd-power (bench/dpdk/run.sh builds it)")
	}
	steps := []rateStep{{gap: flags.Interval(), probes: flags.Probes()}}
	if *rates != "" {
		var err error
		if steps, err = sweepSteps(*rates, flags.Probes()); err != nil {
			t.Fatal(err)
		}
	}
	report(t, measureSteps(t, testpmd, l3fwd, false, flags.Order(forwarders), flags.Rounds(), steps, *burst))
}

// TestIntegrationL3fwdPower is the short side-by-side that make test runs: uiod's l3fwd,
// adaptive and auto, and DPDK's l3fwd-power routing the same probes with the same route in
// one guest boot, one round. Every probe must come back through each; the figures are
// logged (the full comparison is TestDPDKSideBySide, bench/dpdk/run.sh).
func TestIntegrationL3fwdPower(t *testing.T) {
	testpmd, l3fwd := integrationDPDK(t)
	runs := measureAll(t, testpmd, l3fwd, false, []string{"l3fwd-power", "uiod-l3fwd-adaptive", "uiod-l3fwd-auto"}, 1, 1000, 0)
	for _, r := range runs {
		if r.latencyErr != "" || r.lat.Received == 0 {
			t.Errorf("%s routed no probe back: %s", r.name, r.latencyErr)
		}
	}
	report(t, runs)
}

// integrationDPDK skips the make test guest tests of the package under -short, without
// QEMU or without DPDK, and returns testpmd's path and l3fwd-power's, which it builds.
func integrationDPDK(t *testing.T) (testpmd, l3fwd string) {
	testpmd = guestTestpmd(t)
	cache, err := filepath.Abs("../../.cache/dpdk")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "build-l3fwd-power.sh", cache).Output()
	if err != nil {
		t.Skipf("l3fwd-power could not be built (dpdk-dev, libdpdk-dev, dpdk-doc, pkg-config, make): %v", err)
	}
	return testpmd, strings.TrimSpace(string(out))
}

// guestTestpmd skips a make test guest test of the package under -short, without QEMU
// or root, or without Debian's dpdk-testpmd, and returns testpmd's path.
func guestTestpmd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	qemutest.Require(t)
	testpmd, err := exec.LookPath("dpdk-testpmd")
	if err != nil {
		t.Skip("dpdk-testpmd is not installed (apt-get install dpdk)")
	}
	return testpmd
}

// measureAll boots one guest with two igb NICs on vfio-pci (with vf, one VF of each, their
// PF on Linux's igb) and measures each forwarder of order in turn, rounds times with the
// order rotated, with probes probes -dpdk.interval apart from NIC 0 to NIC 1 (and a burst
// of burst probes after each idle stretch, 0 for none).
func measureAll(t *testing.T, testpmd, l3fwd string, vf bool, order []string, rounds, probes, burst int) []run {
	return measureSteps(t, testpmd, l3fwd, vf, order, rounds, []rateStep{{gap: flags.Interval(), probes: probes}}, burst)
}

// measureSteps is measureAll at each probe rate of steps in turn: per round, every rate
// (their order rotated too) with every forwarder.
func measureSteps(t *testing.T, testpmd, l3fwd string, vf bool, order []string, rounds int, steps []rateStep, burst int) []run {
	uiod := qemutest.BuildUIOD(t)
	hostBin = uiod
	files := guestFiles(t, uiod, testpmd, l3fwd)
	script, err := os.ReadFile("guest.sh")
	if err != nil {
		t.Fatal(err)
	}
	if vf {
		// The guest tool that sets a VF's MAC through its PF (busybox's ip cannot).
		files = append(files, qemutest.Binary("guest.test", qemutest.BuildTest(t, "./integration/guest")))
		// coreutils' stdbuf preload, to line-buffer testpmd's stdout (guest.sh).
		const stdbuf = "/usr/libexec/coreutils/libstdbuf.so"
		if !fileExists(stdbuf) {
			t.Skipf("%s is missing (coreutils)", stdbuf)
		}
		files = append(files, qemutest.File(stdbuf[1:], stdbuf))
		script = append([]byte("BENCH_VF=1\n"), script...)
	}

	timeout := time.Duration(rounds*len(order)*len(steps))*3*time.Minute + 5*time.Minute
	vm := qemutest.Start(t, qemutest.Options{
		IOMMU:     true,
		CPUs:      2,
		Memory:    "2G",
		HugePages: 512,
		// Without it a 2-vCPU TCG guest falls back to the HPET clock: every clock read is an
		// emulated MMIO access (no vDSO), which would tax time.Now() far more than rdtsc.
		Cmdline: []string{"tsc=reliable"},
		Files:   files,
		Script:  string(script),
		Timeout: timeout,
	})
	probeDst = vm.NICs[0].MAC.String()
	if vf {
		probeDst = vfProbeMAC
	}
	if _, err := vm.WaitOutput("BENCH bound", 5*time.Minute); err != nil {
		t.Fatalf("guest did not bind the NICs: %v", err)
	}
	var runs []run
	ready := map[string]int{} // READY lines of each forwarder so far
	for r := 0; r < rounds; r++ {
		for _, st := range rotated(steps, r) {
			for _, name := range rotated(order, r) {
				res, err := measure(t, vm, name, r, ready[name], len(runs), st, burst)
				if err != nil {
					t.Errorf("round %d %s at %s: %v", r+1, name, st, err)
					break
				}
				ready[name]++
				runs = append(runs, res)
			}
			if t.Failed() {
				break
			}
		}
		if t.Failed() {
			break
		}
	}
	vm.Send("done")
	out, err := vm.Wait()
	if err != nil {
		t.Logf("guest: %v", err)
	}
	if t.Failed() && out != nil {
		t.Logf("guest output:\n%s", out.Output)
		t.Logf("guest console tail:\n%s", qemutest.Tail(out.Console, 60))
	}
	if out != nil {
		for _, l := range strings.Split(out.Output, "\n") {
			if strings.HasPrefix(l, "BENCH devices ") || strings.HasPrefix(l, "BENCH THREADS ") || strings.HasPrefix(l, "BENCH STATUSDUMP ") || strings.HasPrefix(l, "BENCH vfs ") || strings.HasPrefix(l, "BENCH FWLOG ") {
				t.Log(strings.TrimPrefix(l, "BENCH "))
			}
		}
	}
	return runs
}

// testpmdPath is Debian's dpdk-testpmd, or t fails.
func testpmdPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("dpdk-testpmd")
	if err != nil {
		t.Fatalf("dpdk-testpmd: %v (apt-get install dpdk)", err)
	}
	return p
}

// run is one forwarder's measurement in one round.
