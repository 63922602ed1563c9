package sim

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/pci"
)

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
