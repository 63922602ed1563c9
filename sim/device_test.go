package sim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
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

func TestRegisterSemantics(t *testing.T) {
	type step struct {
		write   bool
		off, v  uint32
		want    uint32 // for reads
		comment string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"rw", []step{{true, toyAddr, 0xdeadbeef, 0, ""}, {false, toyAddr, 0, 0xdeadbeef, "stored"}, {false, toyAddr + 4, 0, 0, "instance 1 separate"}}},
		{"ro", []step{{false, toyID, 0, 0x1234, "reset value"}, {true, toyID, 0, 0, ""}, {false, toyID, 0, 0x1234, "write ignored"}}},
		{"w1s", []step{{true, toyMaskS, 0x3, 0, ""}, {true, toyMaskS, 0x4, 0, ""}, {false, toyMaskS, 0, 0x7, "bits accumulate"}, {true, toyMaskS, 0, 0, ""}, {false, toyMaskS, 0, 0x7, "zeros change nothing"}}},
		{"w1c", []step{{true, toyAddr, 0, 0, ""}, {true, toyCause, 0x1, 0, ""}, {false, toyAddr, 0, 0, ""}}},
		{"read-to-clear", []step{{false, toyStat, 0, 0, ""}}},
		{"mask", []step{{true, toyMasked, 0xFFFF, 0, ""}, {false, toyMasked, 0, 0xABFF, "only low byte writable"}}},
		{"write-only", []step{{true, toyWO, 0x55, 0, ""}, {false, toyWO, 0, 0, "reads zero"}}},
		{"self-clearing reset", []step{{true, toyAddr, 7, 0, ""}, {true, toyCtrl, 1<<31 | 1, 0, ""}, {false, toyCtrl, 0, 0, "RST clear and reset applied"}, {false, toyAddr, 0, 0, "registers reset"}, {false, toyMasked, 0, 0xAB00, "reset value"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := newToy(t, true, nil)
			r, _ := y.d.Region(0)
			for i, s := range tt.steps {
				if s.write {
					r.Write32(s.off, s.v)
					continue
				}
				if got := r.Read32(s.off); got != s.want {
					t.Errorf("step %d: read 0x%x = 0x%x, want 0x%x (%s)", i, s.off, got, s.want, s.comment)
				}
			}
			if err := y.d.Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRegisterHooks(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	r.Write32(toyArr+0x20, 9)
	if len(y.writes) != 1 || y.writes[0] != 2<<16|9 {
		t.Fatalf("array hook saw %x, want instance 2 value 9", y.writes)
	}
	r.Write32(toyCtrl, 1<<31)
	if y.resets != 1 {
		t.Fatalf("OnReset ran %d times", y.resets)
	}
	r.Write64(toyAddr, 0x1122334455667788)
	if got := r.Read64(toyAddr); got != 0x1122334455667788 {
		t.Fatalf("Read64 = %x", got)
	}
	if r.Len() != 0x100 {
		t.Fatalf("Len %d", r.Len())
	}
}

func TestStrictUnknownRegister(t *testing.T) {
	for _, strict := range []bool{false, true} {
		y := newToy(t, strict, nil)
		r, _ := y.d.Region(0)
		if v := r.Read32(0x80); v != 0 {
			t.Errorf("unknown read = %x", v)
		}
		r.Write32(0x84, 1)
		faults, n := y.d.Faults()
		if n != 2 || faults[0].Kind != UnknownRead || faults[1].Kind != UnknownWrite || faults[1].Addr != 0x84 {
			t.Errorf("faults %v (%d)", faults, n)
		}
		if err := y.d.Err(); (err != nil) != strict {
			t.Errorf("strict=%v: Err() = %v", strict, err)
		}
	}
}

func TestBadAccessPanics(t *testing.T) {
	y := newToy(t, false, nil)
	r, _ := y.d.Region(0)
	for _, off := range []uint32{0x2, 0x100, 0xfffffffc} {
		testutil.Panics(t, fmt.Sprintf("access at 0x%x", off), func() { r.Read32(off) })
	}
	if _, err := y.d.Region(1); err == nil {
		t.Error("BAR1 exists")
	}
}

func TestDoorbellDMA(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	mem, err := y.d.DMA().Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if mem.IOVA%4096 != 0 || len(mem.Bytes) != 100 {
		t.Fatalf("alloc: iova %x len %d", mem.IOVA, len(mem.Bytes))
	}
	r.Write64(toyAddr, mem.IOVA+8)

	// Bus mastering off: no DMA, no fault.
	r.Write32(toyBell, 42)
	if !errors.Is(y.dmaErr, ErrNoBusMaster) || LoadUint32(mem.Bytes[8:]) != 0 {
		t.Fatalf("DMA without bus mastering: err %v", y.dmaErr)
	}
	if err := pci.SetBusMaster(y.d.Config(), true); err != nil {
		t.Fatal(err)
	}
	r.Write32(toyBell, 42)
	if y.dmaErr != nil || LoadUint32(mem.Bytes[8:]) != 42 || r.Read32(toyStat) != 1 {
		t.Fatalf("doorbell DMA: err %v, mem %d", y.dmaErr, LoadUint32(mem.Bytes[8:]))
	}
	if err := y.d.Err(); err != nil {
		t.Fatal(err)
	}

	// Beyond the allocation (into the guard page), and after Free: DMA faults.
	r.Write64(toyAddr, mem.IOVA+4096)
	r.Write32(toyBell, 1)
	if !errors.Is(y.dmaErr, ErrNotMapped) {
		t.Fatalf("DMA past the end: %v", y.dmaErr)
	}
	if err := y.d.DMA().Free(mem); err != nil {
		t.Fatal(err)
	}
	r.Write64(toyAddr, mem.IOVA)
	r.Write32(toyBell, 1)
	faults, n := y.d.Faults()
	if n != 2 || faults[0].Kind != DMAFault || faults[1].Addr != mem.IOVA {
		t.Fatalf("faults %v", faults)
	}
	if y.d.Err() == nil || y.d.IOMMU().Faults() != 2 {
		t.Fatal("strict device does not report the DMA faults")
	}
	if err := y.d.DMA().Free(mem); err == nil {
		t.Fatal("double free accepted")
	}
}

func TestSharedIOMMU(t *testing.T) {
	mmu := NewIOMMU()
	a := newToy(t, true, mmu)
	b := newToy(t, true, mmu)
	if a.d.DMA() != b.d.DMA() {
		t.Fatal("devices sharing an IOMMU have different DMA()")
	}
	mem, err := a.d.DMA().Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	pci.SetBusMaster(b.d.Config(), true)
	rb, _ := b.d.Region(0)
	rb.Write64(toyAddr, mem.IOVA)
	rb.Write32(toyBell, 7)
	if LoadUint32(mem.Bytes) != 7 {
		t.Fatal("device b cannot DMA to memory allocated through a")
	}
	a.d.Close()
	if mmu.Mappings() != 1 {
		t.Fatal("closing one device of a shared IOMMU freed its memory")
	}
	b.d.Close()
	if mmu.Mappings() != 0 {
		t.Fatal("closing the last device did not free the IOMMU")
	}
}

func drainAfter(t *testing.T, v *irq.Vector) uint64 {
	t.Helper()
	n, err := v.Drain()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMSIX(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	if _, err := y.d.IRQs(irq.MSIX, 3); err == nil {
		t.Fatal("3 vectors on a 2-vector table")
	}
	if _, err := y.d.IRQs(irq.MSI, 1); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("MSI: %v", err)
	}
	vs, err := y.d.IRQs(irq.MSIX, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := pci.ReadConfig16(y.d.Config(), msixCtrl)
	if ctl&msixEnable == 0 || ctl&pci.MSIXTableSizeMk != 1 {
		t.Fatalf("MSI-X control %#x", ctl)
	}
	r.Write32(toyCause, 0) // nothing
	y.d.Lock()
	y.d.Set(toyCause, 1)
	y.eval() // masked: no message
	y.d.Unlock()
	if drainAfter(t, vs[0]) != 0 {
		t.Fatal("masked cause fired")
	}
	r.Write32(toyMaskS, 1) // unmask with the cause pending: fires
	if drainAfter(t, vs[0]) != 1 || drainAfter(t, vs[1]) != 0 {
		t.Fatal("unmask did not fire the pending cause")
	}
	if got := y.d.Fired(); got[0] != 1 || got[1] != 0 {
		t.Fatalf("Fired %v", got)
	}
	// Function mask blocks delivery.
	pci.WriteConfig16(y.d.Config(), msixCtrl, msixEnable|msixFuncMask)
	y.d.Lock()
	ok := y.d.FireMSIX(0)
	y.d.Unlock()
	if ok || drainAfter(t, vs[0]) != 0 {
		t.Fatal("function-masked vector fired")
	}
	// Replacing the set closes the old vectors.
	if _, err := y.d.IRQs(irq.MSIX, 0); err != nil {
		t.Fatal(err)
	}
	if vs[0].Signal() == nil {
		t.Fatal("old vector still open")
	}
}

func TestINTxLevel(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	vs, err := y.d.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := vs[0]
	r.Write32(toyMaskS, 1)
	y.d.Lock()
	y.d.Set(toyCause, 1)
	y.eval()
	y.d.Unlock()
	if drainAfter(t, v) != 1 {
		t.Fatal("INTx did not fire")
	}
	// Still asserted, but masked until rearm.
	y.d.Lock()
	y.eval()
	y.d.Unlock()
	if drainAfter(t, v) != 0 {
		t.Fatal("INTx fired while masked")
	}
	// Rearm with the cause still asserted: level semantics fire again.
	v.Rearm()
	if drainAfter(t, v) != 1 {
		t.Fatal("rearm of an asserted line did not fire")
	}
	// Acknowledge (read clears the cause), rearm: quiet.
	r.Read32(toyCause)
	v.Rearm()
	if drainAfter(t, v) != 0 {
		t.Fatal("rearm of a deasserted line fired")
	}
	// INTx-disable in the command register holds it off; clearing it delivers.
	pci.UpdateCommand(y.d.Config(), pci.CmdINTxDisable, 0)
	y.d.Lock()
	y.d.Set(toyCause, 1)
	y.eval()
	y.d.Unlock()
	if drainAfter(t, v) != 0 {
		t.Fatal("INTx fired while disabled in the command register")
	}
	pci.UpdateCommand(y.d.Config(), 0, pci.CmdINTxDisable)
	if drainAfter(t, v) != 1 {
		t.Fatal("clearing INTx-disable did not deliver the asserted line")
	}
}

func TestConfigSpace(t *testing.T) {
	y := newToy(t, true, nil)
	c := y.d.Config()
	vid, _ := pci.ReadConfig16(c, pci.CfgVendorID)
	did, _ := pci.ReadConfig16(c, pci.CfgDeviceID)
	if vid != 0x1af4 || did != 0x1234 {
		t.Fatalf("ids %04x:%04x", vid, did)
	}
	pci.WriteConfig16(c, pci.CfgVendorID, 0)
	if vid, _ := pci.ReadConfig16(c, pci.CfgVendorID); vid != 0x1af4 {
		t.Fatal("vendor id writable")
	}
	var b [1]byte
	c.ReadAt(b[:], pci.CfgCapPointer)
	c.ReadAt(b[:], int64(b[0]))
	if b[0] != pci.CapIDMSIX {
		t.Fatalf("capability %#x, want MSI-X", b[0])
	}
	if _, err := c.WriteAt([]byte{1, 2}, configSize-1); err == nil {
		t.Fatal("write past the end accepted")
	}
	if _, err := c.ReadAt(b[:], configSize); err == nil {
		t.Fatal("read past the end accepted")
	}
}

func TestCloseQuiesces(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	pci.SetBusMaster(y.d.Config(), true)
	vs, _ := y.d.IRQs(irq.MSIX, 1)
	mem, _ := y.d.DMA().Alloc(64)
	y.d.Close()
	y.d.Close()
	cmd, _ := pci.ReadConfig16(y.d.Config(), pci.CfgCommand)
	if cmd&pci.CmdBusMaster != 0 {
		t.Fatal("bus mastering on after Close")
	}
	if vs[0].Signal() == nil {
		t.Fatal("vector open after Close")
	}
	if y.d.IOMMU().Mappings() != 0 {
		t.Fatal("memory still mapped after Close")
	}
	_ = mem
	if v := r.Read32(toyID); v != 0xFFFFFFFF {
		t.Fatalf("read after close = %x", v)
	}
	if err := y.d.Err(); err == nil {
		t.Fatal("access after close not reported")
	}
	if _, err := y.d.IRQs(irq.MSIX, 1); err == nil {
		t.Fatal("IRQs after close")
	}
}

func TestRegFileErrors(t *testing.T) {
	bad := [][]Reg{
		{{Name: "A", Off: 0x2}},
		{{Name: "A", Off: 0x100}},
		{{Name: "A", Off: 0x0}, {Name: "B", Off: 0x0}},
		{{Name: "A", Off: 0x0, N: 4}},
	}
	for i, regs := range bad {
		if _, err := New(Config{BAR0Size: 0x100, Regs: regs}); err == nil {
			t.Errorf("table %d accepted", i)
		}
	}
}

func FuzzRegisterAccess(f *testing.F) {
	f.Add([]byte{0, 0x14, 1, 0, 0, 0, 1, 0x0c, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte) {
		y := newToy(t, false, nil)
		r, _ := y.d.Region(0)
		pci.SetBusMaster(y.d.Config(), true)
		mem, _ := y.d.DMA().Alloc(4096)
		r.Write64(toyAddr, mem.IOVA)
		for len(ops) >= 6 {
			off := uint32(ops[1]) &^ 3
			v := uint32(ops[2]) | uint32(ops[3])<<8 | uint32(ops[4])<<16 | uint32(ops[5])<<24
			if ops[0]&1 == 0 {
				r.Read32(off)
			} else {
				r.Write32(off, v)
			}
			ops = ops[6:]
		}
	})
}
