package sim

import (
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

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
