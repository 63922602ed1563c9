package guest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/virtio"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/uio"
	"github.com/uiod/uiod/vfio"
)

// virtioNICs returns the guest's two virtio-net NICs; it skips t unless the guest was
// booted with them (UIOD_GUEST_VIRTIO=1, set by the host test's script).
func virtioNICs(t *testing.T) (string, string) {
	t.Helper()
	nics := guestNICsFor(t, "UIOD_GUEST_VIRTIO", " -run Virtio", 2, "two virtio-net NICs")
	return nics[0], nics[1]
}

// irqCount sums the /proc/interrupts counts of the lines that contain every one of names.
func irqCount(t *testing.T, names ...string) (uint64, bool) {
	t.Helper()
	f, err := os.Open("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total uint64
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		match := true
		for _, n := range names {
			match = match && strings.Contains(line, n)
		}
		if !match {
			continue
		}
		found = true
		for _, w := range strings.Fields(line)[1:] {
			n, err := strconv.ParseUint(w, 10, 64)
			if err != nil {
				break
			}
			total += n
		}
	}
	return total, found
}

// TestGuestVirtioForward drives QEMU's virtio-net with nic/virtio through the real kernel:
// NIC 1 on vfio-pci with MSI-X behind the emulated IOMMU, NIC 2 on uio_pci_generic with
// INTx. In phase "msix" the host sends VirtioFrames frames to NIC 1, one every few
// milliseconds, and the guest forwards each to NIC 2, its poll loop sleeping on NIC 1's RX
// vector between frames; in phase "intx" the host sends to NIC 2 and the guest forwards to
// NIC 1, sleeping on NIC 2's INTx. The host checks that every frame came back; here every
// frame must be forwarded and the thread must have been woken by the receiving port's own
// interrupt, which /proc/interrupts must show.
func TestGuestVirtioForward(t *testing.T) {
	a, b := virtioNICs(t)
	bindForDeviceTest(t, a, "vfio-pci")
	bindForDeviceTest(t, b, "uio_pci_generic")
	log := zaptest.NewLogger(t)
	vd, err := vfio.Open(pci.MustParseAddr(a), vfio.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ud, err := uio.Open(pci.MustParseAddr(b), uio.Options{Log: log})
	if err != nil {
		vd.Close()
		t.Fatal(err)
	}
	cfg := nic.Config{RxRing: 128, TxRing: 128, LinkTimeout: 5 * time.Second}
	cfg.Interrupts = nic.IRQMSIX
	pa, err := virtio.Open(vd, cfg)
	if err != nil {
		vd.Close()
		ud.Close()
		t.Fatal(err)
	}
	defer pa.Close()
	cfg.Interrupts = nic.IRQINTx
	pb, err := virtio.Open(ud, cfg)
	if err != nil {
		ud.Close()
		t.Fatal(err)
	}
	defer pb.Close()
	for _, p := range []*virtio.Port{pa, pb} {
		kind, _ := p.IRQKind()
		t.Logf("%s: mac %v, link %+v, features %#x, %d of %d queue pairs, %v", p.Device().Addr(), p.MAC(), p.Link(), p.Features(), p.QueuePairs(), p.MaxQueuePairs(), kind)
	}
	phases := []struct {
		name    string
		in, out *virtio.Port
		irq     []string
	}{
		{"msix", pa, pb, []string{"vfio-msix", a}},
		{"intx", pb, pa, []string{"uio_pci_generic"}},
	}
	for _, ph := range phases {
		irq0, _ := irqCount(t, ph.irq...)
		f := &relay{in: ph.in, out: ph.out}
		d, err := f.newIdler(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("UIOD-VIRTIO-READY %s\n", ph.name)
		pollUntil(d, f, func() bool { return f.frames >= VirtioFrames }, 2*time.Minute)
		idle := d.Stats()
		d.Close()
		irq1, found := irqCount(t, ph.irq...)
		in, out := ph.in.Stats(), ph.out.Stats()
		fmt.Printf("UIOD-VIRTIO-DONE %s forwarded=%d\n", ph.name, f.frames)
		t.Logf("%s: forwarded %d; idle arms %d sleeps %d woken by interrupt %d, by timeout %d, spurious %d; %v fired %d times; in %+v out %+v",
			ph.name, f.frames, idle.Arms, idle.Sleeps, idle.WakeInterrupt, idle.WakeTimeout, idle.WakeSpurious, ph.irq, irq1-irq0, in, out)
		if f.frames != VirtioFrames {
			t.Errorf("%s: forwarded %d of %d frames", ph.name, f.frames, VirtioFrames)
		}
		if in.RxErrors != 0 || out.TxErrors != 0 {
			t.Errorf("%s: errors: in %+v, out %+v", ph.name, in, out)
		}
		if idle.WakeInterrupt == 0 {
			t.Errorf("%s: the poll thread was never woken by an interrupt: %+v", ph.name, idle)
		}
		if !found || irq1 == irq0 {
			t.Errorf("%s: /proc/interrupts shows no interrupt of %v (found %v, %d → %d)", ph.name, ph.irq, found, irq0, irq1)
		}
	}
}
