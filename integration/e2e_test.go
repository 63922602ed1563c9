package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// The end-to-end test. The guest (testdata/e2e.sh) binds NIC 1 to vfio-pci and NIC 2 to
// uio_pci_generic with `uiod bind` and runs `uiod run`: igb on both, MSI-X on the vfio port,
// INTx on the uio port, l2fwd between them, adaptive idle policy. The host sends probes with
// `uiod latency` into one NIC's wire and expects them back from the other's, both ways, then
// tells the guest to stop: it prints the daemon's /status, SIGTERMs it, and gives the NICs
// back to their drivers with `uiod unbind --restore`. The host checks everything the guest
// printed. With more NIC models (TestIntegrationE2EVirtio), each model's pair of NICs is set up the same
// way and forwarded by the same daemon and poll thread, and probed in turn.

const (
	// e2eProbes probes at e2eInterval go each way: slow enough for TCG to forward every
	// one, far enough apart that the poll thread goes to sleep between them.
	e2eProbes   = 200
	e2eInterval = 5 * time.Millisecond
	// e2eProbeTimeout is how long a probe may take through TCG before it counts as late,
	// and how long the host waits for stragglers after the last one. A late probe was
	// still forwarded: the test reports late probes, it does not fail on them.
	e2eProbeTimeout = 10 * time.Second
	// e2eHugePages are enough for both ports' rings and mempools (uio needs them
	// physically contiguous) with room to spare.
	e2eHugePages = 32
)

// TestIntegrationE2E runs the end-to-end test on two igb NICs in each kernel and vfio
// set-up: Debian's kernel and the shared one (drivers built in) with an emulated Intel
// IOMMU (vfio type1), the shared kernel with the vfio port opened through the device cdev
// and iommufd (vfio.interface: iommufd) instead of the container/group interface, and the
// shared kernel without an IOMMU, the vfio port in vfio's unsafe no-IOMMU mode.
func TestIntegrationE2E(t *testing.T) {
	for _, c := range []struct {
		name          string
		kernel        func() (qemutest.Kernel, error)
		o             qemutest.Options
		vfioInterface string
	}{
		{"DebianIOMMU", qemutest.DebianKernel, qemutest.Options{IOMMU: true}, ""},
		{"SharedIOMMU", qemutest.SharedKernel, qemutest.Options{IOMMU: true}, ""},
		{"SharedIOMMUFD", qemutest.SharedKernel, qemutest.Options{IOMMU: true}, "iommufd"},
		{"SharedNoIOMMU", qemutest.SharedKernel, qemutest.Options{UnsafeNoIOMMU: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) { runE2E(t, c.kernel, c.o, c.vfioInterface, []string{"igb"}) })
	}
}

// TestIntegrationE2EVirtio runs the end-to-end test on Debian's kernel with an emulated
// Intel IOMMU and four NICs: NICs 1 and 2 igb, NICs 3 and 4 modern virtio-net
// (qemutest.VirtioNICArgs: disable-legacy=on,mq=on,vectors=4,iommu_platform=on, each behind
// its own pcie-root-port, dgram netdevs). One `uiod run` forwards igb p0 (vfio-pci, MSI-X)
// ↔ p1 (uio_pci_generic, INTx) and virtio p2 (vfio-pci, MSI-X) ↔ p3 (uio_pci_generic,
// INTx) on one adaptive poll thread; the host probes each pair both ways in turn, so the
// latencies of the two NIC models are measured in the same guest by the same daemon.
func TestIntegrationE2EVirtio(t *testing.T) {
	runE2E(t, qemutest.DebianKernel, qemutest.Options{IOMMU: true}, "", []string{"igb", "virtio"})
}

// direction is one run of probes: into the wire of NIC in, back out of NIC out.
type direction struct {
	name    string
	model   string
	in, out int // indexes into the NICs and the daemon's ports: even ones vfio-pci, odd ones uio
}

// e2eDirections are the runs of probes, in order: for each model's pair of NICs (2k, 2k+1)
// in, and back, out.
func e2eDirections(models []string) []direction {
	var ds []direction
	for k, m := range models {
		a, b := 2*k, 2*k+1
		ds = append(ds,
			direction{fmt.Sprintf("%s-nic%d-to-nic%d", m, a+1, b+1), m, a, b},
			direction{fmt.Sprintf("%s-nic%d-to-nic%d", m, b+1, a+1), m, b, a})
	}
	return ds
}

// runE2E boots a guest on kernel with o and a pair of NICs of each of models ("igb",
// "virtio") running testdata/e2e.sh, all forwarded by one daemon, drives probes through
// each pair both ways and checks what the guest reports. vfioInterface, if set, is the
// daemon's vfio.interface (through its UIOD_VFIO_INTERFACE override); the guest checks the
// daemon used it.
func runE2E(t *testing.T, kernel func() (qemutest.Kernel, error), o qemutest.Options, vfioInterface string, models []string) {
	o.NICs = 2 * len(models)
	o.NICModels = nil
	for _, m := range models {
		o.NICModels = append(o.NICModels, m, m)
	}
	o.Script = "export UIOD_E2E_MODELS='" + strings.Join(models, " ") + "'\n" + testdataScript(t, "e2e.sh")
	if vfioInterface != "" {
		o.Script = "export UIOD_VFIO_INTERFACE=" + vfioInterface + "\n" + o.Script
	}
	directions := e2eDirections(models)
	o.HugePages = e2eHugePages
	o.Timeout = 5 * time.Minute
	vm := startGuest(t, kernel, o)

	// The host's uiod is the guest's static binary. After each run of probes the guest
	// takes a snapshot of the interrupt counts and the daemon's /status, named after it.
	host := binaries.uiod
	runs := map[string]*latencyRun{}
	if _, err := vm.WaitOutput("E2E READY", 4*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else {
		for _, d := range directions {
			r, err := runLatency(t, host, d.name, vm.NICs[d.in], vm.NICs[d.out])
			if err != nil {
				t.Errorf("uiod latency %s: %v", d.name, err)
				break
			}
			runs[d.name] = r
			if err := takeSnapshot(vm, d.name); err != nil {
				t.Error(err)
				break
			}
		}
		if err := vm.Send("done"); err != nil {
			t.Errorf("tell the guest to stop: %v", err)
		}
	}
	res, rep := finishE2E(t, vm)
	if len(res.NICs) < o.NICs {
		t.Fatalf("guest NICs %q, want %d", res.NICs, o.NICs)
	}
	for i := 0; i < o.NICs; i++ {
		if !rep.logged("nic driver", fmt.Sprintf(`"port": "p%d"`, i), fmt.Sprintf(`"nic": "%s"`, o.NICModels[i])) {
			t.Errorf("the daemon's log does not say port p%d was opened by the %s driver", i, o.NICModels[i])
		}
	}
	if vfioInterface != "" && !strings.Contains(res.Output, "E2E vfio interface "+vfioInterface) {
		t.Errorf("guest did not confirm the vfio port was opened through %s", vfioInterface)
	}
	prev := "start"
	for _, d := range directions {
		t.Run(d.name, func(t *testing.T) {
			r := runs[d.name]
			if r == nil {
				t.Fatal("no probes were sent")
			}
			checkProbes(t, r)
			checkWakeups(t, d, res.NICs[:o.NICs], rep, rep.snap(prev), rep.snap(d.name))
		})
		prev = d.name
	}
	if len(models) > 1 || models[0] != "igb" {
		t.Log(e2eLatencyTable(directions, runs))
	}
	checkShutdown(t, rep, res.NICs[:o.NICs])
}
