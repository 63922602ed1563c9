package igb

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// regWrite is one register write seen through logWrites.
// TestInitRegisters checks the register settings the references make and the model
// cannot observe: TXDCTL thresholds 8/1/1 (Linux igb_configure_tx_ring), the multicast
// and VLAN filter tables cleared after the reset, and DRV_LOAD while the driver runs the
// port.
func TestInitRegisters(t *testing.T) {
	m, err := intel.New(intel.Config{Strict: true, Flavor: intel.X82576})
	if err != nil {
		t.Fatal(err)
	}
	var writes []nictest.RegWrite
	p, err := Open(nictest.Recorded(m.PCI(), &writes, nil), nic.Config{TxQueues: 2, Interrupts: nic.IRQNone, LinkTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	for q := 0; q < 2; q++ {
		var last uint32
		for _, w := range writes {
			if w.Off == i82576.TXDCTL(q) {
				last = w.V
			}
		}
		if got := last & (0x1f | 0x1f<<8 | 0x1f<<16); got != 8|1<<8|1<<16 {
			t.Errorf("tx queue %d: TXDCTL thresholds %#x, want PTHRESH 8, HTHRESH 1, WTHRESH 1", q, got)
		}
	}
	nictest.FiltersCleared(t, writes, intelnic.CTRL, intelnic.CtrlReset, i82576.VFTA, i82576.UTA, m.Device().Get)
	if m.Device().Get(intelnic.CTRLEXT)&intelnic.CtrlExtDrvLoad == 0 {
		t.Error("CTRL_EXT.DRV_LOAD clear while the driver runs the port")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if m.Device().Get(intelnic.CTRLEXT)&intelnic.CtrlExtDrvLoad != 0 {
		t.Error("CTRL_EXT.DRV_LOAD still set after Close")
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}
