package intel_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/pci"
	simintel "github.com/uiod/uiod/sim/intel"
)

// openAs opens a port with a driver's Open, as a nic.Port.
func openAs[P nic.Port](open func(pci.Device, nic.Config) (P, error)) func(pci.Device, nic.Config) (nic.Port, error) {
	return func(dev pci.Device, cfg nic.Config) (nic.Port, error) { return open(dev, cfg) }
}

// TestFilterRegisters checks the registers SetMulticast and SetMAC write on the 82599
// (ixgbe) and the 82576 (igb): group 33:33:ff:00:00:01's bit (hash 0x010: MTA[0] bit 16)
// and no other, the controller's multicast control with filter type 0 and its
// multicast promiscuous bit for all only, and RAL/RAH[0] with the valid bit.
func TestFilterRegisters(t *testing.T) {
	for _, tt := range []struct {
		name   string
		flavor simintel.Flavor
		open   func(pci.Device, nic.Config) (nic.Port, error)
		// mode reads the multicast control: its promiscuous bit, and what is wrong with
		// the rest ("": nothing).
		mode func(bar pci.Region) (mpe bool, wrong string)
	}{
		{"82599", simintel.X82599, openAs(ixgbe.Open), func(bar pci.Region) (bool, string) {
			mpe := bar.Read32(i82599.FCTRL)&i82599.FctrlMPE != 0
			if v := bar.Read32(i82599.MCSTCTRL) & 7; v != i82599.McstctrlMFE {
				return mpe, fmt.Sprintf("MCSTCTRL %#x, want MFE with filter type 0", v)
			}
			return mpe, ""
		}},
		{"82576", simintel.X82576, openAs(igb.Open), func(bar pci.Region) (bool, string) {
			v := bar.Read32(i82576.RCTL)
			if v&i82576.RctlMOMask != 0 || v&i82576.RctlEN == 0 {
				return v&i82576.RctlMPE != 0, fmt.Sprintf("RCTL %#x, want receive on and MO 0", v)
			}
			return v&i82576.RctlMPE != 0, ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := simintel.New(simintel.Config{Strict: true, Flavor: tt.flavor})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			port, err := tt.open(m.PCI(), nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer port.Close()
			p := port.(nic.RxFilter)
			bar, err := m.PCI().Region(0)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.SetMulticast([]net.HardwareAddr{{0x33, 0x33, 0xff, 0x00, 0x00, 0x01}}, false); err != nil {
				t.Fatal(err)
			}
			if v := bar.Read32(intelnic.MTA); v != 1<<16 {
				t.Errorf("MTA[0] %#x, want bit 16", v)
			}
			for i := uint32(1); i < 128; i++ {
				if v := bar.Read32(intelnic.MTA + 4*i); v != 0 {
					t.Errorf("MTA[%d] %#x, want 0", i, v)
				}
			}
			if mpe, wrong := tt.mode(bar); mpe || wrong != "" {
				t.Errorf("one group: multicast promiscuous %v, want off; %s", mpe, wrong)
			}
			if err := p.SetMulticast(nil, true); err != nil {
				t.Fatal(err)
			}
			if mpe, wrong := tt.mode(bar); !mpe || wrong != "" || bar.Read32(intelnic.MTA) != 0 {
				t.Errorf("all: multicast promiscuous %v, MTA[0] %#x, want on and an empty table; %s", mpe, bar.Read32(intelnic.MTA), wrong)
			}
			if err := p.SetMAC(net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}); err != nil {
				t.Fatal(err)
			}
			if lo, hi := bar.Read32(intelnic.RAL0), bar.Read32(intelnic.RAH0); lo != 0x33221102 || hi&0xffff != 0x5544 || hi&intelnic.RahAV == 0 {
				t.Errorf("RAL0 %#x RAH0 %#x", lo, hi)
			}
		})
	}
}
