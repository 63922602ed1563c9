package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// hostFilterPhase is the host's side of the guest's filterPhase on the NIC whose socket
// is port and address mac: once the guest is ready, one frame to each of
// guest.FilterDests and the broadcast marker; the guest checks what arrived.
func hostFilterPhase(t *testing.T, vm *qemutest.VM, port *wire.UnixPort, mac []byte) {
	t.Helper()
	if _, err := vm.WaitOutput("UIOD-FILTER-READY", 5*time.Minute); err != nil {
		t.Fatalf("phase filter: %v", err)
	}
	type dest = struct {
		Name string
		Dst  []byte
		Want bool
	}
	for _, d := range append(guest.FilterDests, dest{"marker", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true}) {
		f := make([]byte, 60)
		dst := d.Dst
		if dst == nil {
			dst = mac
		}
		copy(f, dst)
		copy(f[6:], []byte{0x02, 0, 0, 0, 0, 0x55})
		f[12], f[13] = 0x88, 0xb5
		copy(f[14:], "filter "+d.Name)
		if err := port.Send(f); err != nil {
			t.Fatalf("phase filter: send to %s: %v", d.Name, err)
		}
	}
	out, err := vm.WaitOutput("UIOD-FILTER-DONE", time.Minute)
	if err != nil {
		t.Errorf("phase filter: %v", err)
	} else if i := strings.Index(out, "UIOD-FILTER-DONE"); i >= 0 {
		line, _, _ := strings.Cut(out[i:], "\n")
		t.Logf("phase filter: %s", line)
	}
}

// TestIntegrationIGBFilter proves nic/igb's receive filter on QEMU's igb (which filters
// by RAL/RAH, the MTA and RCTL as the 82576 does): TestGuestIGBFilter opens NIC 1 under
// vfio-pci, not promiscuous, and joins one group; the host sends frames to that group,
// another group, an IPv4 group, another host and the NIC's own address, then a broadcast:
// only the group's, the own address's and the broadcast may arrive.
func TestIntegrationIGBFilter(t *testing.T) {
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, HugePages: 16, Timeout: 8 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_IGB_FILTER", "^TestGuestIGBFilter$", 5*time.Minute),
	})
	p, err := wire.ListenUnix(vm.NICs[0].HostSocket, vm.NICs[0].GuestSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	hostFilterPhase(t, vm, p, vm.NICs[0].MAC)
	finishGuest(t, vm)
}
