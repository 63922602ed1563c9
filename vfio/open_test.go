package vfio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci"
)

var testAddr = pci.MustParseAddr("0000:01:00.0")

// fixture builds a fake host tree: one PCI function bound to driver (none if ""), in
// IOMMU group 5 with a second member bound to igb, and the given extra files.
func fixture(t *testing.T, driver string, files ...string) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	dev := "sys/devices/pci0000:00/0000:01:00.0"
	mk(dev)
	mk("sys/devices/pci0000:00/0000:01:00.1")
	mk("sys/bus/pci/devices")
	mk("sys/bus/pci/drivers/vfio-pci")
	mk("sys/bus/pci/drivers/igb")
	mk("sys/kernel/iommu_groups/5/devices")
	link("../../../devices/pci0000:00/0000:01:00.0", "sys/bus/pci/devices/0000:01:00.0")
	link("../../../devices/pci0000:00/0000:01:00.1", "sys/bus/pci/devices/0000:01:00.1")
	if driver != "" {
		link("../../../bus/pci/drivers/"+driver, dev+"/driver")
	}
	link("../../../bus/pci/drivers/igb", "sys/devices/pci0000:00/0000:01:00.1/driver")
	link("../../../kernel/iommu_groups/5", dev+"/iommu_group")
	link("../../../../devices/pci0000:00/0000:01:00.0", "sys/kernel/iommu_groups/5/devices/0000:01:00.0")
	link("../../../../devices/pci0000:00/0000:01:00.1", "sys/kernel/iommu_groups/5/devices/0000:01:00.1")
	for _, f := range files {
		mk(filepath.Dir(f))
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		root    func(t *testing.T) string
		addr    pci.Addr
		opts    Options
		is      error
		mention []string
	}{
		{
			name:    "no such device",
			root:    func(t *testing.T) string { return fixture(t, "vfio-pci") },
			addr:    pci.MustParseAddr("0000:02:00.0"),
			mention: []string{"0000:02:00.0"},
		},
		{
			name:    "bound to a host driver",
			root:    func(t *testing.T) string { return fixture(t, "igb") },
			is:      ErrNotBound,
			mention: []string{"0000:01:00.0", "igb", "uiod bind"},
		},
		{
			name:    "no driver",
			root:    func(t *testing.T) string { return fixture(t, "") },
			is:      ErrNotBound,
			mention: []string{"no driver"},
		},
		{
			name:    "no vfio device nodes",
			root:    func(t *testing.T) string { return fixture(t, "vfio-pci") },
			is:      ErrNoVFIO,
			mention: []string{"dev/vfio/vfio", "dev/iommu", "modprobe vfio-pci"},
		},
		{
			name:    "container node is not vfio",
			root:    func(t *testing.T) string { return fixture(t, "vfio-pci", "dev/vfio/vfio") },
			is:      unix.ENOTTY,
			mention: []string{"dev/vfio/vfio", "not a VFIO container"},
		},
		{
			name:    "forced group mode without node",
			root:    func(t *testing.T) string { return fixture(t, "vfio-pci", "dev/iommu") },
			opts:    Options{Mode: ModeGroup},
			is:      ErrNoVFIO,
			mention: []string{"dev/vfio/vfio"},
		},
		{
			name:    "iommufd node is not iommufd",
			root:    func(t *testing.T) string { return fixture(t, "vfio-pci", "dev/iommu") },
			is:      unix.ENOTTY,
			mention: []string{"dev/iommu", "IOAS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Root = tt.root(t)
			addr := tt.addr
			if addr == (pci.Addr{}) {
				addr = testAddr
			}
			d, err := Open(addr, opts)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestSysfsHelpers(t *testing.T) {
	root := fixture(t, "vfio-pci")
	n, err := iommuGroup(root, testAddr)
	if err != nil || n != 5 {
		t.Errorf("iommuGroup = %d, %v; want 5", n, err)
	}
	if _, err := iommuGroup(root, pci.MustParseAddr("0000:01:00.1")); err == nil || !strings.Contains(err.Error(), "no IOMMU group") {
		t.Errorf("iommuGroup without link: %v", err)
	}
	m := groupMembers(root, 5)
	if !strings.Contains(m, "0000:01:00.0 (vfio-pci)") || !strings.Contains(m, "0000:01:00.1 (igb)") {
		t.Errorf("groupMembers = %q", m)
	}
	if _, err := cdevName(root, testAddr); !errors.Is(err, ErrNotSupported) {
		t.Errorf("cdevName without vfio-dev: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/bus/pci/devices/0000:01:00.0/vfio-dev/vfio3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if name, err := cdevName(root, testAddr); err != nil || name != "vfio3" {
		t.Errorf("cdevName = %q, %v", name, err)
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeAuto: "auto", ModeGroup: "group", ModeIOMMUFD: "iommufd", Mode(9): "vfio.Mode(9)"} {
		if m.String() != want {
			t.Errorf("%d: %q", int(m), m.String())
		}
	}
}

// TestTrackAfterClose covers a device that finishes opening after its container closed:
// Close has dropped the device set, so the container must refuse the device (and the
// caller release it) instead of panicking on the nil map or keeping a live device.
func TestTrackAfterClose(t *testing.T) {
	c := &Container{fd: -1, groups: map[int]int{}, devices: map[*Device]struct{}{}, iova: NewIOVAAllocator()}
	c.dma = dmamem.New(containerMapper{c}, dmamem.Options{HugePages: dmamem.HugeOff})
	d := &Device{c: c}
	if !c.track(d) {
		t.Fatal("open container refused a device")
	}
	c.forget(d)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.track(&Device{c: c}) {
		t.Error("closed container accepted a device")
	}
}
