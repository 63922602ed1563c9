package vectors

import (
	"errors"
	"fmt"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// device is a model device whose MSI-X enable fails with msixErr.
type device struct {
	pci.Device
	msixErr error
}

func (d device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind == irq.MSIX && n > 0 && d.msixErr != nil {
		return nil, d.msixErr
	}
	return d.Device.IRQs(kind, n)
}

func newDevice(t *testing.T, msixErr error) device {
	t.Helper()
	d, err := sim.New(sim.Config{
		Addr: pci.MustParseAddr("0000:00:05.0"), VendorID: 0x1af4, DeviceID: 0x1234,
		BAR0Size: 0x100, MSIXVectors: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return device{Device: d, msixErr: msixErr}
}

func TestEnable(t *testing.T) {
	unsupported := fmt.Errorf("no msi-x here: %w", pci.ErrNotSupported)
	broken := errors.New("msi-x table unreadable")
	tests := []struct {
		name    string
		mode    nic.IRQMode
		msixErr error
		want    irq.Kind
		wantErr error // nil: no error
	}{
		{"default takes msi-x", nic.IRQDefault, nil, irq.MSIX, nil},
		{"msi-x", nic.IRQMSIX, nil, irq.MSIX, nil},
		{"default falls back when msi-x is not supported", nic.IRQDefault, unsupported, irq.INTx, nil},
		{"default does not fall back on other failures", nic.IRQDefault, broken, 0, broken},
		{"msi-x asked for does not fall back", nic.IRQMSIX, unsupported, 0, pci.ErrNotSupported},
		{"intx", nic.IRQINTx, nil, irq.INTx, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newDevice(t, tt.msixErr)
			s, err := Enable(dev, tt.mode, 3)
			if tt.wantErr != nil {
				testutil.ErrorIs(t, err, tt.wantErr, "enable msi-x")
				if _, ok := s.IRQKind(); ok || s.RxVector(0) != nil {
					t.Errorf("failed Enable left vectors: %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kind, ok := s.IRQKind(); !ok || kind != tt.want {
				t.Fatalf("IRQKind %v %v, want %v", kind, ok, tt.want)
			}
			wantAll := 1
			if tt.want == irq.MSIX {
				wantAll = 4
			}
			if len(s.All) != wantAll || len(s.Rx) != 3 {
				t.Fatalf("%d vectors, %d RX vectors: want %d, 3", len(s.All), len(s.Rx), wantAll)
			}
			for q := 0; q < 3; q++ {
				want := s.All[0]
				if tt.want == irq.MSIX {
					want = s.All[q]
				}
				if s.RxVector(q) != want {
					t.Errorf("RX queue %d on vector %d, want %d", q, s.RxVector(q).Index, want.Index)
				}
			}
			if other := s.Other(); (tt.want == irq.MSIX) != (other == s.All[len(s.All)-1] && other != nil) {
				t.Errorf("other vector %v in %v mode", other, tt.want)
			}
			s.Disable(dev)
			if _, ok := s.IRQKind(); ok || s.RxVector(0) != nil || s.Other() != nil {
				t.Errorf("vectors left after Disable: %+v", s)
			}
		})
	}
}

func TestZeroSet(t *testing.T) {
	var s Set
	if _, ok := s.IRQKind(); ok || s.RxVector(0) != nil || s.Other() != nil {
		t.Errorf("the zero Set has vectors: %+v", s)
	}
}
