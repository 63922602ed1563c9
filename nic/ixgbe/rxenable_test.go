package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// regWrite is one register write seen by a recordingDevice.
type regWrite struct{ off, v uint32 }

// recordingDevice is a modelled device whose BAR0 logs every register write.
type recordingDevice struct {
	*sim.Device
	writes *[]regWrite
}

func (d recordingDevice) Region(bar int) (pci.Region, error) {
	r, err := d.Device.Region(bar)
	if err != nil {
		return nil, err
	}
	return recordingRegion{r, d.writes}, nil
}

type recordingRegion struct {
	pci.Region
	writes *[]regWrite
}

func (r recordingRegion) Write32(off, v uint32) {
	*r.writes = append(*r.writes, regWrite{off, v})
	r.Region.Write32(off, v)
}

// TestRxEnabledWithSecurityPathHalted checks the 82599 erratum workaround: RXCTRL.RXEN is
// set only while SECRXCTRL.RX_DIS halts the receive data path, and the path is resumed
// afterwards.
func TestRxEnabledWithSecurityPathHalted(t *testing.T) {
	m, err := intel.New(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var writes []regWrite
	p, err := Open(recordingDevice{m.Device(), &writes}, nic.Config{NoIRQ: true, LinkTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	halted, enabled, resumed := false, false, false
	for _, w := range writes {
		switch w.off {
		case regSECRXCTRL:
			halted = w.v&secrxctrlRxDis != 0
			resumed = enabled && !halted
		case regRXCTRL:
			if w.v&rxctrlRXEN != 0 && !enabled {
				if !halted {
					t.Fatal("RXCTRL.RXEN set with the receive data path running (SECRXCTRL.RX_DIS clear)")
				}
				enabled = true
			}
		}
	}
	if !enabled || !resumed {
		t.Fatalf("receive enabled %v, data path resumed after it %v", enabled, resumed)
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}
