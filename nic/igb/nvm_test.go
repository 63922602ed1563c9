package igb

import (
	"bytes"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/intel"
)

// noNVM is an 82576 whose EEPROM auto-read never completes, as on QEMU's igb, whose
// EECD reads 0x1110 (no AUTO_RD) for ever.
func noNVM(dev pci.Device) pci.Device {
	return nictest.Hooked(dev, nictest.Hooks{Read: func(bar int, off, v uint32) uint32 {
		if bar == 0 && off == i82576.EECD {
			v &^= intelnic.EecAutoRead
		}
		return v
	}})
}

// TestOpenWithoutNVMAutoRead opens a port whose EEPROM auto-read-done bit never sets: like
// Linux's igb, the driver goes on, and the port comes up with its address and link.
func TestOpenWithoutNVMAutoRead(t *testing.T) {
	drv := nictest.Driver{
		Open: nictest.OpenWith(func(dev pci.Device, cfg nic.Config) (*Port, error) {
			return Open(noNVM(dev), cfg)
		}, (*Port).intelCore),
		Family:    nictest.Intel(intel.X82576, intel.Quirks{}),
		SpeedMbps: 1000,
	}
	h := nictest.New(t, drv, nic.Config{})
	if !bytes.Equal(h.Port.MAC(), h.Model.MAC()) {
		t.Errorf("MAC %v, model has %v", h.Port.MAC(), h.Model.MAC())
	}
	if l := h.Port.Link(); !l.Up {
		t.Errorf("link %+v, want up", l)
	}
}
