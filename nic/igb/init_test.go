package igb

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/intel"
)

// regWrite is one register write seen through logWrites.
type regWrite struct{ off, v uint32 }

// logWrites is dev with every 32-bit register write logged in writes.
func logWrites(dev pci.Device, writes *[]regWrite) pci.Device {
	return nictest.Hooked(dev, nictest.Hooks{Write: func(_ int, off uint32, v uint64, size int) bool {
		if size == 4 {
			*writes = append(*writes, regWrite{off, uint32(v)})
		}
		return true
	}})
}

// TestInitRegisters checks the register settings the references make and the model
// cannot observe: TXDCTL thresholds 8/1/1 (Linux igb_configure_tx_ring), the multicast
// and VLAN filter tables cleared after the reset, and DRV_LOAD while the driver runs the
// port.
func TestInitRegisters(t *testing.T) {
	m, err := intel.New(intel.Config{Strict: true, Flavor: intel.X82576})
	if err != nil {
		t.Fatal(err)
	}
	var writes []regWrite
	p, err := Open(logWrites(m.Device(), &writes), nic.Config{TxQueues: 2, NoIRQ: true, LinkTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	for q := 0; q < 2; q++ {
		var last uint32
		for _, w := range writes {
			if w.off == i82576.TXDCTL(q) {
				last = w.v
			}
		}
		if got := last & (0x1f | 0x1f<<8 | 0x1f<<16); got != 8|1<<8|1<<16 {
			t.Errorf("tx queue %d: TXDCTL thresholds %#x, want PTHRESH 8, HTHRESH 1, WTHRESH 1", q, got)
		}
	}
	reset := -1
	for i, w := range writes {
		if w.off == intelnic.CTRL && w.v&intelnic.CtrlReset != 0 {
			reset = i
		}
	}
	cleared := map[uint32]bool{}
	for _, w := range writes[reset+1:] {
		if w.v == 0 {
			cleared[w.off] = true
		}
	}
	for i := uint32(0); i < 128; i++ {
		if !cleared[0x05200+4*i] || !cleared[i82576.VFTA+4*i] {
			t.Fatalf("MTA[%d] or VFTA[%d] not cleared after the reset", i, i)
		}
		if !cleared[i82576.UTA+4*i] || m.Device().Get(i82576.UTA+4*i) != 0 {
			t.Fatalf("UTA[%d] = %#x: not cleared after the reset", i, m.Device().Get(i82576.UTA+4*i))
		}
	}
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
