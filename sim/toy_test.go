package sim

import (
	"testing"

	"github.com/uiod/uiod/pci"
)

// toy is a tiny device: a few registers of every kind, a doorbell that DMAs a counter to
// memory, and a cause register that drives an interrupt.
type toy struct {
	d       *Device
	rang    int
	dbValue uint32
	resets  int
	dmaErr  error
	writes  []uint32
}

const (
	toyCtrl   = 0x00 // RW, bit 31 self-clearing reset
	toyID     = 0x04 // RO
	toyMaskS  = 0x08 // W1S
	toyCause  = 0x0C // W1C, read hook: reads clear and drop INTx
	toyStat   = 0x10 // RO read-to-clear
	toyBell   = 0x14 // doorbell: DMA the value to toyAddr
	toyAddr   = 0x18 // RW, 2 instances (low/high)
	toyMasked = 0x20 // RW with mask 0xFF
	toyWO     = 0x24 // WO
	toyArr    = 0x40 // 4 instances stride 0x10
)

func newToy(t *testing.T, strict bool, mmu *IOMMU) *toy {
	t.Helper()
	y := &toy{}
	regs := []Reg{
		{Name: "CTRL", Off: toyCtrl, Access: RW, SelfClear: 1 << 31, Write: func(_ int, _, v uint32) {
			if v&(1<<31) != 0 {
				y.d.ResetRegisters()
			}
		}},
		{Name: "ID", Off: toyID, Access: RO, Reset: 0x1234},
		{Name: "MASK", Off: toyMaskS, Access: W1S, Write: func(int, uint32, uint32) { y.eval() }},
		{Name: "CAUSE", Off: toyCause, Access: W1C,
			Read:  func(_ int, v uint32) uint32 { y.d.Set(toyCause, 0); y.eval(); return v },
			Write: func(int, uint32, uint32) { y.eval() }},
		{Name: "STAT", Off: toyStat, Access: RO, ReadClear: true},
		{Name: "BELL", Off: toyBell, Access: WO, Doorbell: func(_ int, v uint32) {
			y.d.Lock()
			defer y.d.Unlock()
			y.rang++
			y.dbValue = v
			addr := uint64(y.d.Get(toyAddr)) | uint64(y.d.Get(toyAddr+4))<<32
			b, err := y.d.DMAAt(addr, 4, "toy doorbell")
			y.dmaErr = err
			if err == nil {
				StoreUint32(b, v)
				y.d.Set(toyStat, y.d.Get(toyStat)+1)
				y.d.Set(toyCause, y.d.Get(toyCause)|1)
				y.eval()
			}
		}},
		{Name: "ADDR", Off: toyAddr, N: 2, Stride: 4, Access: RW},
		{Name: "MASKED", Off: toyMasked, Access: RW, Mask: 0xFF, Reset: 0xAB00},
		{Name: "WO", Off: toyWO, Access: WO},
		{Name: "ARR", Off: toyArr, N: 4, Stride: 0x10, Access: RW, Write: func(i int, _, v uint32) {
			y.writes = append(y.writes, uint32(i)<<16|v)
		}},
	}
	d, err := New(Config{
		Addr: pci.MustParseAddr("0000:00:05.0"), VendorID: 0x1af4, DeviceID: 0x1234,
		BAR0Size: 0x100, Regs: regs, MSIXVectors: 2, IOMMU: mmu, Strict: strict,
		OnReset: func() { y.resets++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	y.d = d
	t.Cleanup(func() { d.Close() })
	return y
}

// eval drives the interrupt from cause & mask: MSI-X vector 0 or the INTx level.
func (y *toy) eval() {
	pending := y.d.Get(toyCause)&y.d.Get(toyMaskS) != 0
	if y.d.MSIXEnabled() {
		if pending {
			y.d.FireMSIX(0)
		}
		return
	}
	y.d.SetINTx(pending)
}

// locked runs fn with the device lock held, as the model's own hooks run.
func (y *toy) locked(fn func()) {
	y.d.Lock()
	defer y.d.Unlock()
	fn()
}

// raise sets the cause bit and drives the interrupt from it.
func (y *toy) raise() { y.locked(func() { y.d.Set(toyCause, 1); y.eval() }) }
