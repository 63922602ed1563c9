package pcihost_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestLayoutLookups covers the sysfs and /dev lookups the backends make through Host.
func TestLayoutLookups(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.AddUIO(pcitest.Unbound, 2, 0)
	tr.AddVFIOGroup(4, false)
	tr.AddVFIOGroup(6, true)
	tr.AddVFIOCdev(pcitest.I350, 0)
	tr.AddReset(pcitest.Igb82576)
	h, err := pcihost.New(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	a := pci.MustParseAddr
	if drv, err := h.Driver(a(pcitest.I350)); err != nil || drv != pcihost.DriverVFIO {
		t.Errorf("Driver(I350) = %q, %v", drv, err)
	}
	if drv, err := h.Driver(a(pcitest.Unbound)); err != nil || drv != "" {
		t.Errorf("Driver(Unbound) = %q, %v", drv, err)
	}
	if err := h.CheckBound(a(pcitest.I350), pcihost.DriverVFIO); err != nil {
		t.Errorf("CheckBound(I350, vfio-pci): %v", err)
	}
	err = h.CheckBound(a(pcitest.Igb82576), pcihost.DriverVFIO)
	if !errors.Is(err, pcihost.ErrNotBound) || !strings.Contains(err.Error(), "uiod bind --driver vfio-pci "+pcitest.Igb82576) {
		t.Errorf("CheckBound(igb port, vfio-pci) = %v", err)
	}
	if err := h.CheckBound(a("0000:42:00.0"), pcihost.DriverVFIO); !errors.Is(err, pcihost.ErrNoDevice) {
		t.Errorf("CheckBound(missing) = %v", err)
	}
	if g, err := h.IOMMUGroup(a(pcitest.X540)); err != nil || g != 2 {
		t.Errorf("IOMMUGroup(X540) = %d, %v", g, err)
	}
	if m, err := h.IOMMUGroupMembers(1); err != nil || len(m) != 3 {
		t.Errorf("IOMMUGroupMembers(1) = %v, %v", m, err)
	}
	if p, err := h.UIODevice(a(pcitest.Unbound)); err != nil || p != tr.Path("dev/uio2") {
		t.Errorf("UIODevice = %q, %v", p, err)
	}
	if _, err := h.UIODevice(a(pcitest.I350)); err == nil {
		t.Error("UIODevice of a function without uio succeeded")
	}
	if p, noiommu, err := h.VFIOGroupDevice(4); err != nil || noiommu || p != tr.Path("dev/vfio/4") {
		t.Errorf("VFIOGroupDevice(4) = %q %v %v", p, noiommu, err)
	}
	if p, noiommu, err := h.VFIOGroupDevice(6); err != nil || !noiommu || p != tr.Path("dev/vfio/noiommu-6") {
		t.Errorf("VFIOGroupDevice(6) = %q %v %v", p, noiommu, err)
	}
	if p, err := h.VFIOCdev(a(pcitest.I350)); err != nil || p != tr.Path("dev/vfio/devices/vfio0") {
		t.Errorf("VFIOCdev = %q, %v", p, err)
	}
	if _, err := h.VFIOCdev(a(pcitest.X540)); !errors.Is(err, pci.ErrNotSupported) {
		t.Errorf("VFIOCdev without vfio-dev = %v", err)
	}
	if err := h.ResetFunction(a(pcitest.Igb82576)); err != nil {
		t.Errorf("ResetFunction: %v", err)
	}
	if got := tr.ReadFile("sys/bus/pci/devices/" + pcitest.Igb82576 + "/reset"); got != "1" {
		t.Errorf("reset holds %q", got)
	}
	if err := h.ResetFunction(a(pcitest.X540)); !errors.Is(err, pci.ErrNotSupported) {
		t.Errorf("ResetFunction without reset = %v", err)
	}
	f, err := h.OpenDeviceFile(a(pcitest.X540), "config", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
