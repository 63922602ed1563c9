package nictest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/wire"
)

// msixFails is a device whose MSI-X enable fails with err (every other interrupt kind
// works as the model's).
type msixFails struct {
	pci.Device
	err error
}

func (d msixFails) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind == irq.MSIX && n > 0 {
		return nil, d.err
	}
	return d.Device.IRQs(kind, n)
}

// InterruptModes checks how the interrupt mode is chosen: the zero Config uses MSI-X, the
// default mode falls back to INTx only when MSI-X is not supported, and every other
// MSI-X failure (or an explicit MSI-X request the backend cannot serve) fails the open. On
// a family without INTx, the fallback and the INTx request fail as not supported.
func InterruptModes(t *testing.T, drv Driver) {
	notSupported := fmt.Errorf("irqs: msi-x: %w", pci.ErrNotSupported)
	other := errors.New("set irqs: invalid argument")
	tests := []struct {
		name     string
		mode     nic.IRQMode
		msixErr  error // nil: the model's MSI-X works
		want     irq.Kind
		wantFail error // the open fails wrapping this
	}{
		{"default uses msi-x", nic.IRQDefault, nil, irq.MSIX, nil},
		{"default falls back when not supported", nic.IRQDefault, notSupported, irq.INTx, nil},
		{"default fails on another error", nic.IRQDefault, other, 0, other},
		{"msi-x required", nic.IRQMSIX, notSupported, 0, pci.ErrNotSupported},
		{"intx", nic.IRQINTx, other, irq.INTx, nil},
	}
	for _, tt := range tests {
		if drv.Family.NoINTx && tt.wantFail == nil && tt.want == irq.INTx {
			tt.want, tt.wantFail = 0, pci.ErrNotSupported // no line to fall back to
		}
		t.Run(tt.name, func(t *testing.T) {
			a, b := wire.Pair()
			defer b.Close()
			m, err := drv.Family.New(ModelConfig{Wire: a})
			if err != nil {
				t.Fatal(err)
			}
			dev := m.PCI()
			if tt.msixErr != nil {
				dev = msixFails{dev, tt.msixErr}
			}
			p, err := drv.Open(dev, nic.Config{Interrupts: tt.mode, LinkTimeout: 1})
			if tt.wantFail != nil {
				if err == nil {
					p.Close()
					t.Fatalf("open succeeded; want an error wrapping %v", tt.wantFail)
				}
				if !errors.Is(err, tt.wantFail) {
					t.Fatalf("open: %v; want an error wrapping %v", err, tt.wantFail)
				}
				if m.Device().MSIXEnabled() {
					t.Error("msi-x left enabled after the failed open")
				}
				m.Close()
				return
			}
			if err != nil {
				m.Close()
				t.Fatalf("open: %v", err)
			}
			defer p.Close()
			if kind, ok := p.IRQKind(); !ok || kind != tt.want {
				t.Fatalf("interrupt kind %v (ok %v), want %v", kind, ok, tt.want)
			}
		})
	}
}
