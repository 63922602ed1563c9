package igb

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// TestOpenLinkModes opens ports whose EEPROM link mode the driver reads from CTRL_EXT: the
// copper and SerDes parts come up with link, an SGMII port (an external PHY this driver
// does not drive) is refused with an error naming the mode.
func TestOpenLinkModes(t *testing.T) {
	tests := []struct {
		name    string
		id      uint16
		sgmii   bool
		wantErr string
	}{
		{name: "copper", id: 0x10C9},
		{name: "serdes", id: 0x10E7},
		{name: "sgmii", id: 0x10E7, sgmii: true, wantErr: "link mode SGMII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far, cable := wire.Pair()
			defer far.Close()
			m, err := intel.New(intel.Config{Wire: cable, Strict: true, Flavor: intel.X82576, DeviceID: tt.id})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			dev := nictest.Hooked(m.Device(), nictest.Hooks{Read: func(bar int, off, v uint32) uint32 {
				if tt.sgmii && bar == 0 && off == intelnic.CTRLEXT {
					v = v&^i82576.CtrlExtLinkModeMask | i82576.CtrlExtLinkSGMII
				}
				return v
			}})
			p, err := Open(dev, nic.Config{NoIRQ: true, LinkTimeout: time.Second})
			if tt.wantErr != "" {
				testutil.ErrorContains(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if l := p.Link(); !l.Up || l.SpeedMbps != 1000 {
				t.Errorf("link %+v, want up at 1000 Mb/s", l)
			}
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
