package igb

import (
	"bytes"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/intel"
)

// noNVM is an 82576 whose EEPROM auto-read never completes, as on QEMU's igb, whose
// EECD reads 0x1110 (no AUTO_RD) for ever.
type noNVM struct{ pci.Device }

func (d noNVM) Region(bar int) (pci.Region, error) {
	r, err := d.Device.Region(bar)
	if err != nil || bar != 0 {
		return r, err
	}
	return noNVMRegion{r}, nil
}

type noNVMRegion struct{ pci.Region }

func (r noNVMRegion) Read32(off uint32) uint32 {
	v := r.Region.Read32(off)
	if off == regEECD {
		v &^= eecdAutoRead
	}
	return v
}

// TestOpenWithoutNVMAutoRead opens a port whose EEPROM auto-read-done bit never sets: like
// Linux's igb, the driver goes on, and the port comes up with its address and link.
func TestOpenWithoutNVMAutoRead(t *testing.T) {
	drv := nictest.Driver{
		Open: nictest.OpenWith(func(dev pci.Device, cfg nic.Config) (*Port, error) {
			return Open(noNVM{dev}, cfg)
		}),
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
