package guest

import (
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/nic/virtio"
)

// TestGuestVirtioLatency reflects the host's probes on an igb NIC (nic/igb) and then on a
// virtio-net NIC (nic/virtio) of the same guest, both under vfio-pci with MSI-X and the
// same adaptive idle policy, so that the host can time both round trips alike. Here every
// probe must be reflected.
func TestGuestVirtioLatency(t *testing.T) {
	nics := guestNICsFor(t, "UIOD_GUEST_VIRTIO_LATENCY", " -run VirtioLatency", 2, "an igb and a virtio-net NIC")
	cfg := nic.Config{RxRing: 128, TxRing: 128, Interrupts: nic.IRQMSIX, LinkTimeout: 5 * time.Second}
	for i, name := range []string{"igb", "virtio"} {
		addr := nics[i]
		dev := openVFIO(t, addr)
		var p nic.Port
		var err error
		if name == "igb" {
			p, err = igb.Open(dev, cfg)
		} else {
			p, err = virtio.Open(dev, cfg)
		}
		if err != nil {
			dev.Close()
			t.Fatalf("%s %s: %v", name, addr, err)
		}
		r := &relay{in: p, out: p, mark: VirtioProbeSource}
		d, err := r.newIdler(time.Second)
		if err != nil {
			p.Close()
			t.Fatal(err)
		}
		fmt.Printf("UIOD-VIRTIO-LAT-READY %s\n", name)
		pollUntil(d, r, func() bool { return r.marked >= VirtioLatencyProbes }, 2*time.Minute)
		// The last reflected probe may still be queued in the device: virtio-net sends
		// after the notification, asynchronously, and Close resets the device. Let it go.
		if vp, ok := p.(interface{ TxPending(int) int }); ok {
			drain := time.Now().Add(5 * time.Second)
			for p.TxBurst(0, nil) == 0 && vp.TxPending(0) > 0 && time.Now().Before(drain) {
				time.Sleep(time.Millisecond)
			}
		}
		s := d.Stats()
		d.Close()
		fmt.Printf("UIOD-VIRTIO-LAT-DONE %s\n", name)
		t.Logf("%s %s: reflected %d probes; arms %d sleeps %d woken by interrupt %d, by timeout %d; port %+v",
			name, addr, r.marked, s.Arms, s.Sleeps, s.WakeInterrupt, s.WakeTimeout, p.Stats())
		if err := p.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
		if r.marked != VirtioLatencyProbes {
			t.Errorf("%s: reflected %d of %d probes", name, r.marked, VirtioLatencyProbes)
		}
	}
}
