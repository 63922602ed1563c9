package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// openRecorded opens a port on a strict model, recording every register write in the
// returned list (what reads return changed by read, if set, which may look at the list),
// and closes it when the test ends, failing the test on a strict-model error.
func openRecorded(t *testing.T, cfg nic.Config, read func(writes []nictest.RegWrite, off, v uint32) uint32) (*Port, *intel.Model, *[]nictest.RegWrite) {
	t.Helper()
	m, err := intel.New(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	writes := new([]nictest.RegWrite)
	var hook func(off, v uint32) uint32
	if read != nil {
		hook = func(off, v uint32) uint32 { return read(*writes, off, v) }
	}
	p, err := Open(nictest.Recorded(m.PCI(), writes, hook), cfg)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if err := m.Device().Err(); err != nil {
			t.Error(err)
		}
	})
	return p, m, writes
}

// TestInitRegisters checks the register settings the references make and the model
// cannot observe: RDRXCTL's required bits (Linux ixgbe_setup_rdrxctl), GPIE.OCD in MSI-X
// mode and GPIE before the IVAR entries (ixgbe_setup_gpie, then ixgbe_configure_msix),
// EIMC written with all ones, the multicast and VLAN filter tables cleared after the
// reset, and DRV_LOAD.
func TestInitRegisters(t *testing.T) {
	p, m, writes := openRecorded(t, nic.Config{Interrupts: nic.IRQMSIX, RxQueues: 2, TxQueues: 2, LinkTimeout: 1}, nil)
	w := *writes

	rdrxctl := nictest.Written(w, i82599.RDRXCTL)
	if len(rdrxctl) == 0 {
		t.Fatal("RDRXCTL never written")
	}
	last := rdrxctl[len(rdrxctl)-1]
	if want := uint32(i82599.RdrxctlRSCACKC | i82599.RdrxctlFCoEWrFix | i82599.RdrxctlCRCStrip); last&want != want || last&i82599.RdrxctlRSCFrstSize != 0 {
		t.Errorf("RDRXCTL %#x: want RSCACKC, FCOE_WRFIX and CRCSTRIP set, RSCFRSTSIZE clear", last)
	}

	gpieAt, ivarAt := -1, -1
	for i, x := range w {
		if x.Off == i82599.GPIE && x.V&intelnic.GpieMSIXMode != 0 && gpieAt < 0 {
			gpieAt = i
			if x.V&i82599.GpieOCD == 0 {
				t.Errorf("GPIE %#x in MSI-X mode without OCD", x.V)
			}
		}
		if x.Off >= i82599.IVAR(0) && x.Off < i82599.IVAR(64) && ivarAt < 0 {
			ivarAt = i
		}
	}
	if gpieAt < 0 || ivarAt < 0 || ivarAt < gpieAt {
		t.Errorf("GPIE MSI-X mode written at %d, first IVAR at %d: GPIE must come first", gpieAt, ivarAt)
	}

	for _, v := range nictest.Written(w, i82599.EIMC) {
		if v != 0xffffffff && v&^0xffff != 0 {
			t.Errorf("EIMC written %#x to mask everything, want all ones", v)
		}
	}

	nictest.FiltersCleared(t, w, intelnic.CTRL, intelnic.CtrlReset, i82599.VFTA, i82599.UTA, m.Device().Get)

	bar, _ := m.Device().Region(0)
	if bar.Read32(intelnic.CTRLEXT)&intelnic.CtrlExtDrvLoad == 0 {
		t.Error("CTRL_EXT.DRV_LOAD clear while the driver runs the port")
	}
	p.Close()
	if v := m.Device().Get(intelnic.CTRLEXT); v&intelnic.CtrlExtDrvLoad != 0 {
		t.Errorf("CTRL_EXT %#x: DRV_LOAD still set after Close", v)
	}
}

// TestJumboLimit checks that MAXFRS never exceeds the 82599's largest frame, 9728 bytes,
// however large the buffers.
func TestJumboLimit(t *testing.T) {
	_, _, writes := openRecorded(t, nic.Config{BufSize: 16 * 1024, Interrupts: nic.IRQNone, LinkTimeout: 1}, nil)
	for _, v := range nictest.Written(*writes, i82599.MAXFRS) {
		if mfs := v >> i82599.MaxfrsShift; mfs > 9728 {
			t.Errorf("MAXFRS.MFS %d, beyond the 82599's 9728", mfs)
		}
	}
}
