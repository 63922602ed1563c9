package guest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/vfio"
)

// TestGuestVFIO opens NIC 1 through vfio-pci with every kernel interface the guest
// offers: reads the igb STATUS register, maps DMA, fires MSI-X vectors and INTx, and
// closes cleanly (twice, to prove nothing stays held).
func TestGuestVFIO(t *testing.T) {
	nic, _ := guestNICs(t)
	bindForDeviceTest(t, nic, "vfio-pci")
	addr := pci.MustParseAddr(nic)

	t.Run("group", func(t *testing.T) {
		for round := 0; round < 2; round++ {
			exerciseVFIO(t, addr, vfio.Options{Mode: vfio.ModeGroup, Log: zaptest.NewLogger(t)})
		}
	})
	t.Run("iommufd", func(t *testing.T) {
		if noIOMMU() {
			t.Skip("no-IOMMU mode: the cdev path needs an IOMMU")
		}
		if _, err := os.Stat("/dev/iommu"); err != nil {
			t.Skipf("kernel without iommufd: %v", err)
		}
		if _, err := os.Stat(filepath.Join("/sys/bus/pci/devices", nic, "vfio-dev")); err != nil {
			t.Skipf("kernel without the VFIO device cdev: %v", err)
		}
		exerciseVFIO(t, addr, vfio.Options{Mode: vfio.ModeIOMMUFD, Log: zaptest.NewLogger(t)})
	})
	t.Run("shared container", func(t *testing.T) {
		c, err := vfio.NewContainer(vfio.Options{Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.DMA().Alloc(4096); err == nil {
			t.Error("DMA allocation before any device joined succeeded")
		}
		d, err := c.Open(addr)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		if d.DMA() != c.DMA() {
			t.Error("device and container return different DMA allocators")
		}
		if _, err := c.DMA().Alloc(8192); err != nil {
			t.Error(err)
		}
		if _, err := d.IRQs(irq.MSIX, 1); err != nil {
			t.Error(err)
		}
		// Closing the container quiesces and closes the device and frees the memory.
		if err := c.Close(); err != nil {
			t.Errorf("Container.Close: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("Device.Close after Container.Close: %v", err)
		}
	})
	t.Run("wrong driver", func(t *testing.T) {
		_, other := guestNICs(t)
		if driverOf(t, other) == "vfio-pci" {
			t.Skip("both NICs on vfio-pci")
		}
		_, err := vfio.Open(pci.MustParseAddr(other), vfio.Options{})
		if !errors.Is(err, vfio.ErrNotBound) {
			t.Errorf("Open of %s (driver %q): %v, want ErrNotBound", other, driverOf(t, other), err)
		}
	})
}

func exerciseVFIO(t *testing.T, addr pci.Addr, opts vfio.Options) {
	start := time.Now()
	d, err := vfio.Open(addr, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	t.Logf("opened %s via %v in %v (no-IOMMU: %v)", addr, d.Container().Mode(), time.Since(start).Round(time.Millisecond), d.Container().NoIOMMU())
	if d.Container().NoIOMMU() != noIOMMU() {
		t.Errorf("container NoIOMMU = %v, guest no-IOMMU mode %v", d.Container().NoIOMMU(), noIOMMU())
	}
	bar0 := checkIdentity(t, d)
	checkDMA(t, d.DMA(), d.Container().NoIOMMU())
	checkDeviceDMA(t, d, bar0)
	checkOtherBARs(t, d, bar0)

	// MSI-X: every vector the device has, each with its own eventfd.
	n, err := d.IRQInfo(irq.MSIX)
	if err != nil || n < 2 {
		t.Fatalf("MSI-X vectors: %d, %v", n, err)
	}
	if _, err := d.IRQs(irq.MSIX, n+1); err == nil {
		t.Errorf("IRQs(MSIX, %d) beyond the device's %d succeeded", n+1, n)
	}
	vs, err := d.IRQs(irq.MSIX, n)
	if err != nil {
		t.Fatalf("IRQs(MSIX, %d): %v", n, err)
	}
	fds := map[int]bool{}
	for _, v := range vs {
		fds[v.Fd()] = true
	}
	if len(fds) != n {
		t.Errorf("%d vectors share %d descriptors", n, len(fds))
	}
	bar0.Write32(i82576.EIMC, 0xFFFFFFFF)
	bar0.Write32(i82576.EIAC, 0)
	bar0.Write32(i82576.GPIE, intelnic.GpieMSIXMode|intelnic.GpiePBASupport)
	bar0.Write32(i82576.EIMS, 1|1<<(n-1))
	fireMSIX(t, bar0, vs, 0)
	fireMSIX(t, bar0, vs, n-1)
	fireMSIX(t, bar0, vs, 0) // again: the vector keeps working
	bar0.Write32(i82576.EIMC, 0xFFFFFFFF)

	// Replacing the set closes the old eventfds.
	vs2, err := d.IRQs(irq.MSIX, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := vs[1].Signal(); err == nil {
		t.Error("an eventfd of the replaced set is still open")
	}
	bar0.Write32(i82576.EIMS, 1)
	fireMSIX(t, bar0, vs2, 0)
	bar0.Write32(i82576.EIMC, 0xFFFFFFFF)
	bar0.Write32(i82576.GPIE, 0)

	// INTx through VFIO: the kernel masks it when it fires, Rearm unmasks.
	in, err := d.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatalf("IRQs(INTx, 1): %v", err)
	}
	fireINTx(t, bar0, in[0])
	fireINTx(t, bar0, in[0])
	if a := testing.AllocsPerRun(50, func() { in[0].Rearm() }); a != 0 {
		t.Errorf("INTx Rearm allocates %v times", a)
	}
	if _, err := d.IRQs(irq.INTx, 0); err != nil {
		t.Errorf("IRQs(INTx, 0): %v", err)
	}
	if err := in[0].Rearm(); err == nil {
		t.Error("Rearm after disabling INTx succeeded")
	}
}

// TestGuestVFIONoIOMMU opens NIC 1 through a no-IOMMU group (shared kernel booted
// without an IOMMU): DMA bus addresses must be physical addresses.
func TestGuestVFIONoIOMMU(t *testing.T) {
	nic, _ := guestNICs(t)
	if !noIOMMU() {
		t.Skip("guest has an IOMMU")
	}
	bindForDeviceTest(t, nic, "vfio-pci")
	grp, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", nic, "iommu_group"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/dev/vfio/noiommu-" + filepath.Base(grp)); err != nil {
		t.Fatalf("no-IOMMU group node: %v", err)
	}
	d, err := vfio.Open(pci.MustParseAddr(nic), vfio.Options{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.Container().NoIOMMU() {
		t.Error("container on a noiommu group does not report NoIOMMU")
	}
	checkPhysical(t, d.DMA())
}
