package ixgbe

import (
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// TestLinkKeepsEEPROMMode opens each media type the driver claims on a model of it: the
// driver must write AUTOC back with the link mode the EEPROM loaded (only restarting
// auto-negotiation), and the link must come up. Forcing 10G serial, as an SFP+ wants,
// leaves a backplane or CX4 port without link.
func TestLinkKeepsEEPROMMode(t *testing.T) {
	for _, id := range []uint16{0x10FB, 0x10F7, 0x1517, 0x10F9, 0x10FC} {
		t.Run(deviceIDs[id].name, func(t *testing.T) {
			a, b := wire.Pair()
			defer b.Close()
			m, err := intel.New(intel.Config{Wire: a, Strict: true, DeviceID: id})
			if err != nil {
				t.Fatal(err)
			}
			var writes []nictest.RegWrite
			var loaded uint32 // AUTOC as the driver first read it after its reset
			resetSeen := false
			read := func(off, v uint32) uint32 {
				if off == i82599.AUTOC && resetSeen && loaded == 0 {
					loaded = v
				}
				return v
			}
			dev := nictest.Recorded(m.PCI(), &writes, func(off, v uint32) uint32 {
				if !resetSeen {
					for _, w := range writes {
						if w.Off == intelnic.CTRL && w.V&intelnic.CtrlReset != 0 {
							resetSeen = true
						}
					}
				}
				return read(off, v)
			})
			p, err := Open(dev, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			autoc := nictest.Written(writes, i82599.AUTOC)
			if len(autoc) == 0 {
				t.Fatal("AUTOC never written: auto-negotiation not restarted")
			}
			for _, v := range autoc {
				if v&i82599.AutocLMSMask != loaded&i82599.AutocLMSMask {
					t.Errorf("AUTOC written with LMS %d, the EEPROM loaded %d", v&i82599.AutocLMSMask>>i82599.AutocLMSShift, loaded&i82599.AutocLMSMask>>i82599.AutocLMSShift)
				}
			}
			if autoc[len(autoc)-1]&i82599.AutocAnRestart == 0 {
				t.Errorf("last AUTOC write %#x does not restart auto-negotiation", autoc[len(autoc)-1])
			}
			testutil.Eventually(t, 2*time.Second, func() bool { return p.Link().Up }, "link down on %s media", deviceIDs[id].media)
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLinkRefusesModeMediaCannotRun checks that an EEPROM link mode the port's media does
// not run (or the reserved mode 5) fails the open and names the mode, instead of opening
// a port whose link can never come up.
func TestLinkRefusesModeMediaCannotRun(t *testing.T) {
	tests := []struct {
		id  uint16
		lms uint32
	}{
		{0x10FB, 5},                     // reserved
		{0x10FB, i82599.LMSKX4KXKR},     // backplane mode on an SFP+ cage
		{0x10F9, i82599.LMS10GSerial},   // serial mode on CX4
		{0x10F7, i82599.LMS10GSerial},   // serial mode on a KX4 backplane
		{0x1517, i82599.LMS10GSerial},   // serial mode on KR
		{0x10FC, i82599.LMS10GSerial},   // serial mode on XAUI
		{0x10F9, i82599.LMSKX4KXKR1GAN}, // backplane auto-negotiation on CX4
	}
	for _, tt := range tests {
		m, err := intel.New(intel.Config{Strict: true, DeviceID: tt.id})
		if err != nil {
			t.Fatal(err)
		}
		var writes []nictest.RegWrite
		dev := nictest.Recorded(m.PCI(), &writes, func(off, v uint32) uint32 {
			if off == i82599.AUTOC {
				v = v&^i82599.AutocLMSMask | tt.lms<<i82599.AutocLMSShift
			}
			return v
		})
		p, err := Open(dev, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
		if err == nil {
			p.Close()
			t.Errorf("%04x with LMS %d opened", tt.id, tt.lms)
			m.Close()
			continue
		}
		testutil.ErrorContains(t, err, "AUTOC.LMS=", deviceIDs[tt.id].name)
		m.Close()
	}
}

// TestLinkSpeed checks that the link speed follows the link mode: an SFP+ port brought up
// in 10G serial reports 10000 Mb/s, and 1000 Mb/s once AUTOC is switched to 1 GbE (the
// model's LINKS reports the speed of the mode).
func TestLinkSpeed(t *testing.T) {
	for _, tt := range []struct {
		lms  uint32
		mbps int
	}{{i82599.LMS10GSerial, 10000}, {i82599.LMS1GNoAN, 1000}} {
		t.Run(fmt.Sprintf("lms%d", tt.lms), func(t *testing.T) {
			a, b := wire.Pair()
			defer b.Close()
			m, err := intel.New(intel.Config{Wire: a, Strict: true, DeviceID: i82599.DeviceSFP})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Open(m.PCI(), nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			bar, err := m.Device().Region(0)
			if err != nil {
				t.Fatal(err)
			}
			autoc := bar.Read32(i82599.AUTOC)&^i82599.AutocLMSMask | tt.lms<<i82599.AutocLMSShift
			bar.Write32(i82599.AUTOC, autoc|i82599.AutocAnRestart)
			testutil.Eventually(t, 2*time.Second, func() bool { l := p.Link(); return l.Up && l.SpeedMbps == tt.mbps },
				"link not up at %d Mb/s", tt.mbps)
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
