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
// copper and SerDes parts come up with link (SerDes by PCS auto-negotiation, 1000BASE-KX
// forced to 1000/full), an SGMII port (an external PHY this driver does not drive) is
// refused with an error naming the mode.
func TestOpenLinkModes(t *testing.T) {
	tests := []struct {
		name    string
		id      uint16
		mode    uint32 // the link mode CTRL_EXT reads as, if not the model's
		pcs     uint32 // PCS_LCTL bits the driver must have set
		wantErr string
	}{
		{name: "copper", id: 0x10C9},
		{name: "serdes", id: 0x10E7, pcs: i82576.PcsLctlANEnable},
		{name: "1000base-kx", id: 0x10E7, mode: i82576.CtrlExtLink1000BaseKX, pcs: i82576.PcsLctlFSD | i82576.PcsLctlFSV1000 | i82576.PcsLctlFDVFull},
		{name: "sgmii", id: 0x10E7, mode: i82576.CtrlExtLinkSGMII, wantErr: "link mode SGMII"},
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
			dev := nictest.Hooked(m.PCI(), nictest.Hooks{Read: func(bar int, off, v uint32) uint32 {
				if tt.mode != 0 && bar == 0 && off == intelnic.CTRLEXT {
					v = v&^i82576.CtrlExtLinkModeMask | tt.mode
				}
				return v
			}})
			p, err := Open(dev, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: time.Second})
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
			bar, err := m.Device().Region(0)
			if err != nil {
				t.Fatal(err)
			}
			lctl := bar.Read32(i82576.PCSLCTL)
			forced, autoneg := tt.pcs&i82576.PcsLctlFSD != 0, lctl&i82576.PcsLctlANEnable != 0
			if tt.pcs != 0 && (lctl&tt.pcs != tt.pcs || forced == autoneg) {
				t.Errorf("PCS_LCTL %#x, want %#x set (and auto-negotiation off only when forced)", lctl, tt.pcs)
			}
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
