package vectors

import (
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// TestEnableMapsQueues checks the queue-to-vector map, the other causes' vector and
// Disable in both modes. The choice of mode (fallback from MSI-X only when it is not
// supported) is checked on every driver by nictest.InterruptModes.
func TestEnableMapsQueues(t *testing.T) {
	for _, mode := range []nic.IRQMode{nic.IRQMSIX, nic.IRQINTx} {
		d, err := sim.New(sim.Config{
			Addr: pci.MustParseAddr("0000:00:05.0"), VendorID: 0x1af4, DeviceID: 0x1234,
			BAR0Size: 0x100, MSIXVectors: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		s, err := Enable(d, mode, 3)
		if err != nil {
			t.Fatal(err)
		}
		msix := mode == nic.IRQMSIX
		want, all := irq.INTx, 1
		if msix {
			want, all = irq.MSIX, 4
		}
		if kind, ok := s.IRQKind(); !ok || kind != want || len(s.All) != all || len(s.Rx) != 3 {
			t.Fatalf("%v: IRQKind %v %v, %d vectors, %d RX vectors", mode, kind, ok, len(s.All), len(s.Rx))
		}
		for q := 0; q < 3; q++ {
			v := s.All[0]
			if msix {
				v = s.All[q]
			}
			if s.RxVector(q) != v {
				t.Errorf("%v: RX queue %d on vector %d, want %d", mode, q, s.RxVector(q).Index, v.Index)
			}
		}
		if other := s.Other(); msix && other != s.All[3] || !msix && other != nil {
			t.Errorf("%v: other vector %v", mode, other)
		}
		s.Disable(d)
		if _, ok := s.IRQKind(); ok || s.RxVector(0) != nil || s.Other() != nil {
			t.Errorf("%v: vectors left after Disable: %+v", mode, s)
		}
	}
}

func TestZeroSet(t *testing.T) {
	var s Set
	if _, ok := s.IRQKind(); ok || s.RxVector(0) != nil || s.Other() != nil {
		t.Errorf("the zero Set has vectors: %+v", s)
	}
}
