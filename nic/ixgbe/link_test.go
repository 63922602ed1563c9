package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

// TestLinkRefusesModeMediaCannotRun checks that an EEPROM link mode the port's media does
// not run (or the reserved mode 5) fails the open and names the mode, instead of opening
// a port whose link can never come up.
func TestLinkRefusesModeMediaCannotRun(t *testing.T) {
	tests := []struct {
		id  uint16
		lms uint32
	}{
		{0x10FB, 5},              // reserved
		{0x10FB, lmsKX4KXKR},     // backplane mode on an SFP+ cage
		{0x10F9, lms10GSerial},   // serial mode on CX4
		{0x10F7, lms10GSerial},   // serial mode on a KX4 backplane
		{0x1517, lms10GSerial},   // serial mode on KR
		{0x10FC, lms10GSerial},   // serial mode on XAUI
		{0x10F9, lmsKX4KXKR1GAN}, // backplane auto-negotiation on CX4
	}
	for _, tt := range tests {
		m, err := intel.New(intel.Config{Strict: true, DeviceID: tt.id})
		if err != nil {
			t.Fatal(err)
		}
		var writes []regWrite
		dev := recordingDevice{m.Device(), &writes, func(off, v uint32) uint32 {
			if off == regAUTOC {
				v = v&^autocLMSMask | tt.lms<<autocLMSShift
			}
			return v
		}}
		p, err := Open(dev, nic.Config{NoIRQ: true, LinkTimeout: 1})
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
