package vfio

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

var testAddr = pci.MustParseAddr("0000:01:00.0")

// fixture builds a fake host tree: one PCI function bound to driver (none if ""), in
// IOMMU group 5 with a second member bound to igb, and the given extra files (empty
// regular files standing in for device nodes).
func fixture(t *testing.T, driver string, files ...string) string {
	t.Helper()
	tr := pcitest.New(t)
	tr.AddFunction(pcitest.Function{Addr: testAddr.String(), Vendor: 0x8086, Device: 0x10fb, Class: 0x020000, Driver: driver, IOMMUGroup: 5})
	tr.AddFunction(pcitest.Function{Addr: "0000:01:00.1", Vendor: 0x8086, Device: 0x10fb, Class: 0x020000, Driver: "igb", IOMMUGroup: 5})
	for _, f := range files {
		tr.WriteFile(f, "")
	}
	return tr.Root
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		driver  string   // the function's driver in the fixture
		nodes   []string // the device nodes the fixture has
		addr    pci.Addr
		opts    Options
		is      error
		mention []string
	}{
		{
			name:    "no such device",
			driver:  "vfio-pci",
			addr:    pci.MustParseAddr("0000:02:00.0"),
			mention: []string{"0000:02:00.0"},
		},
		{
			name:    "bound to a host driver",
			driver:  "igb",
			is:      ErrNotBound,
			mention: []string{"0000:01:00.0", "igb", "uiod bind"},
		},
		{
			name:    "no driver",
			driver:  "",
			is:      ErrNotBound,
			mention: []string{"no driver"},
		},
		{
			name:    "no vfio device nodes",
			driver:  "vfio-pci",
			is:      ErrNoVFIO,
			mention: []string{"dev/vfio/vfio", "dev/iommu", "modprobe vfio-pci"},
		},
		{
			name:    "container node is not vfio",
			driver:  "vfio-pci",
			nodes:   []string{"dev/vfio/vfio"},
			is:      unix.ENOTTY,
			mention: []string{"dev/vfio/vfio", "not a VFIO container"},
		},
		{
			name:    "forced group mode without node",
			driver:  "vfio-pci",
			nodes:   []string{"dev/iommu"},
			opts:    Options{Mode: ModeGroup},
			is:      ErrNoVFIO,
			mention: []string{"dev/vfio/vfio"},
		},
		{
			name:    "iommufd node is not iommufd",
			driver:  "vfio-pci",
			nodes:   []string{"dev/iommu"},
			is:      unix.ENOTTY,
			mention: []string{"dev/iommu", "IOAS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Root = fixture(t, tt.driver, tt.nodes...)
			addr := tt.addr
			if addr == (pci.Addr{}) {
				addr = testAddr
			}
			testutil.OpenFails(t, func() (*Device, error) { return Open(addr, opts) }, tt.is, tt.mention...)
		})
	}
}

func TestGroupMembers(t *testing.T) {
	h, err := pcihost.New(fixture(t, "vfio-pci"))
	if err != nil {
		t.Fatal(err)
	}
	m := groupMembers(h, 5)
	if !strings.Contains(m, "0000:01:00.0 (vfio-pci)") || !strings.Contains(m, "0000:01:00.1 (igb)") {
		t.Errorf("groupMembers = %q", m)
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
	c := &Container{be: nopBackend{}, devices: map[*Device]struct{}{}}
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

// nopBackend is a backend with no kernel behind it and no address space yet.
type nopBackend struct{}

func (nopBackend) attach(pci.Addr) (int, error) { return -1, pci.ErrNotSupported }
func (nopBackend) space() dmaSpace              { return nil }
func (nopBackend) close() error                 { return nil }
