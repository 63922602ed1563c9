package ixgbe

import (
	"net"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
)

// TestFilterRegisters checks the registers SetMulticast and SetMAC write: group
// 33:33:ff:00:00:01's bit (hash 0x010: MTA[0] bit 16), MCSTCTRL with filter type 0 and
// the table on, FCTRL.MPE for all only, and RAL/RAH[0] with the valid bit.
func TestFilterRegisters(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQNone})
	p := nictest.DriverPort(h.Port).(*Port)
	bar, err := h.Dev.Region(0)
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
	if v := bar.Read32(i82599.MCSTCTRL) & 7; v != i82599.McstctrlMFE {
		t.Errorf("MCSTCTRL %#x, want MFE with filter type 0", v)
	}
	if bar.Read32(i82599.FCTRL)&i82599.FctrlMPE != 0 {
		t.Error("FCTRL.MPE set without all")
	}
	if err := p.SetMulticast(nil, true); err != nil {
		t.Fatal(err)
	}
	if bar.Read32(i82599.FCTRL)&i82599.FctrlMPE == 0 || bar.Read32(intelnic.MTA) != 0 {
		t.Errorf("all: FCTRL %#x MTA[0] %#x, want MPE and an empty table", bar.Read32(i82599.FCTRL), bar.Read32(intelnic.MTA))
	}
	if err := p.SetMAC(net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}); err != nil {
		t.Fatal(err)
	}
	if lo, hi := bar.Read32(intelnic.RAL0), bar.Read32(intelnic.RAH0); lo != 0x33221102 || hi&0xffff != 0x5544 || hi&intelnic.RahAV == 0 {
		t.Errorf("RAL0 %#x RAH0 %#x", lo, hi)
	}
}
