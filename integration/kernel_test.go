package integration

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationKernelPathGuest proves the kernel exception path on a vfio-bound NIC in
// a real kernel: a guest (Debian's kernel, which has TUN) with one igb NIC on a host TAP
// runs testdata/kernel.sh, where `uiod run` drives the NIC under vfio-pci (MSI-X, l3fwd)
// and its kernel path uiodk0 holds the guest's address. The host side, moved into a
// network namespace of the test's, pings that address through the NIC: the guest kernel
// answers ARP with the NIC's MAC and the pings, and the TAP is gone once the daemon
// stopped.
func TestIntegrationKernelPathGuest(t *testing.T) {
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModel: "igb", NICs: 1, TAPQueues: 1, HugePages: 16, Timeout: 8 * time.Minute,
		Modules: append(slices.Clone(qemutest.DefaultModules), "tun"),
		Script:  testdataScript(t, "kernel.sh"),
	})
	if _, err := vm.WaitOutput("E2E READY", 5*time.Minute); err != nil {
		t.Error(err)
	} else if err := pingGuest(t, vm); err != nil {
		t.Error(err)
	}
	_, rep := doneE2E(t, vm)
	rep.checkRunExit(t)
	if !rep.logged("kernel path up", `"tap": "uiodk0"`) {
		t.Errorf("the daemon's log does not say the kernel path came up:\n%s", strings.Join(rep.log, "\n"))
	}
}

// pingGuest moves the host TAP of vm's NIC into a namespace of the test's, gives it
// 10.233.0.2/24 and pings the guest's kernel at 10.233.0.1 through the vfio-bound NIC.
func pingGuest(t *testing.T, vm *qemutest.VM) error {
	ns := testutil.Netns(t, "uiod-guestk")
	tap := vm.NICs[0].TAP
	if out, err := exec.Command("ip", "link", "set", tap, "netns", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s netns %s: %v: %s", tap, ns, err, out)
	}
	testutil.IPIn(t, ns, "addr", "add", "10.233.0.2/24", "dev", tap)
	testutil.IPIn(t, ns, "link", "set", tap, "up")
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "5", "-i", "0.5", "-W", "10", "10.233.0.1").CombinedOutput()
	t.Logf("ping through the vfio-bound NIC:\n%s", out)
	if err != nil || !strings.Contains(string(out), " 0% packet loss") {
		return fmt.Errorf("ping 10.233.0.1: %v", err)
	}
	if neigh := testutil.IPIn(t, ns, "neigh", "show", "10.233.0.1"); !strings.Contains(neigh, vm.NICs[0].MAC.String()) {
		return fmt.Errorf("10.233.0.1 resolved as %q, want the NIC's (and its TAP's) address %s", neigh, vm.NICs[0].MAC)
	}
	return nil
}
