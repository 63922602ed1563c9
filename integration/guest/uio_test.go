package guest

import (
	"errors"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/uio"
)

// TestGuestUIO opens NIC 2 through uio_pci_generic: reads the igb STATUS register, gets
// DMA memory with physical addresses, fires INTx through ICS and sees /dev/uioN become
// readable, rearms by clearing the INTx-disable bit, and closes cleanly.
func TestGuestUIO(t *testing.T) {
	_, nic := guestNICs(t)
	bindForDeviceTest(t, nic, "uio_pci_generic")
	addr := pci.MustParseAddr(nic)
	for round := 0; round < 2; round++ {
		exerciseUIO(t, addr)
	}
	t.Run("wrong driver", func(t *testing.T) {
		other, _ := guestNICs(t)
		if driverOf(t, other) == "uio_pci_generic" {
			t.Skip("both NICs on uio_pci_generic")
		}
		if _, err := uio.Open(pci.MustParseAddr(other), uio.Options{}); !errors.Is(err, uio.ErrNotBound) {
			t.Errorf("Open of %s: %v, want ErrNotBound", other, err)
		}
	})
}

func exerciseUIO(t *testing.T, addr pci.Addr) {
	d, err := uio.Open(addr, uio.Options{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
	}()
	t.Logf("opened %s as %s", addr, d.UIOPath())
	bar0 := checkIdentity(t, d)
	checkDMA(t, d.DMA(), true)
	checkDeviceDMA(t, d, bar0)
	checkOtherBARs(t, d, bar0)

	checkPhysical(t, d.DMA())

	if _, err := d.IRQs(irq.MSIX, 1); !errors.Is(err, uio.ErrNotSupported) {
		t.Errorf("IRQs(MSIX): %v, want ErrNotSupported", err)
	}
	vs, err := d.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatalf("IRQs(INTx, 1): %v", err)
	}
	bar0.Write32(i82576.GPIE, 0)
	for i := 0; i < 2; i++ {
		fireUIO(t, d, bar0, vs[0])
	}
	if a := testing.AllocsPerRun(50, func() { vs[0].Rearm() }); a != 0 {
		t.Errorf("Rearm allocates %v times", a)
	}
	if _, err := d.IRQs(irq.INTx, 0); err != nil {
		t.Fatal(err)
	}
	cmd, _ := pci.ReadConfig16(d.Config(), pci.CfgCommand)
	if cmd&pci.CmdINTxDisable == 0 {
		t.Errorf("command %#04x: INTx enabled after IRQs(INTx, 0)", cmd)
	}

	cfg := d.Config()
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := pci.ReadConfig16(cfg, pci.CfgCommand); err == nil {
		t.Error("config space still usable after Close")
	}
}

// fireUIO raises the legacy LSC cause through ICS and checks the uio path: the fd becomes
// readable, the kernel masked INTx (command bit 10), and Rearm clears the bit again.
func fireUIO(t *testing.T, d *uio.Device, bar0 pci.Region, v *irq.Vector) {
	t.Helper()
	bar0.Write32(i82576.IMC, 0xFFFFFFFF)
	bar0.Read32(i82576.ICR)
	v.Drain()
	if err := v.Rearm(); err != nil {
		t.Fatal(err)
	}
	bar0.Write32(i82576.IMS, i82576.IcrLSC)
	bar0.Write32(i82576.ICS, i82576.IcrLSC)
	if !waitReadable(t, v.Fd(), irqTimeout) {
		t.Fatalf("%s did not become readable within %v of the ICS write", d.UIOPath(), irqTimeout)
	}
	if n, err := v.Drain(); err != nil || n == 0 {
		t.Errorf("Drain = %d, %v", n, err)
	}
	t.Logf("INTx fired: %s readable", d.UIOPath())
	cmd, _ := pci.ReadConfig16(d.Config(), pci.CfgCommand)
	if cmd&pci.CmdINTxDisable == 0 {
		t.Errorf("command %#04x: uio_pci_generic should have masked INTx", cmd)
	}
	// Acknowledge the cause, then rearm (the order of docs/design.md §10).
	if icr := bar0.Read32(i82576.ICR); icr&i82576.IcrLSC == 0 {
		t.Errorf("ICR = %#x, want LSC", icr)
	}
	bar0.Write32(i82576.IMC, 0xFFFFFFFF)
	if err := v.Rearm(); err != nil {
		t.Fatal(err)
	}
	cmd, _ = pci.ReadConfig16(d.Config(), pci.CfgCommand)
	if cmd&pci.CmdINTxDisable != 0 {
		t.Errorf("command %#04x: INTx still masked after Rearm", cmd)
	}
}
