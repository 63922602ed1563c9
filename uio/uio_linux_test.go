package uio

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

var testAddr = pci.MustParseAddr("0000:02:00.0")

const testResource = "0x00000000fe800000 0x00000000fe81ffff 0x0000000000040200\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x000000000000c000 0x000000000000c01f 0x0000000000040101\n" +
	"0x00000000fe820000 0x00000000fe823fff 0x0000000000040200\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x00000000fe840000 0x00000000fe87ffff 0x0000000000046200\n"

// fixture builds a host tree with one 82576 bound to driver and, unless skip names them,
// its uio entry and /dev node (uio3), and its reset file. BAR0 is memory, BAR2 I/O
// ports, BAR3 memory without a resourceN file. The command register has bus mastering
// on, as a previous user would leave it.
func fixture(t *testing.T, driver string, skip ...string) *pcitest.Tree {
	t.Helper()
	tr := pcitest.New(t)
	tr.AddFunction(pcitest.Function{Addr: testAddr.String(), Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: driver, IOMMUGroup: 1})
	tr.SetBARs(testAddr.String(),
		pcitest.BAR{Start: 0xfe800000, Size: 0x20000, Flags: 0x40200},
		pcitest.BAR{},
		pcitest.BAR{Start: 0xc000, Size: 0x20, Flags: 0x40101},
		pcitest.BAR{Start: 0xfe820000, Size: 0x4000, Flags: 0x40200})
	tr.Remove("sys/bus/pci/devices/" + testAddr.String() + "/resource3")
	tr.SetCommand(testAddr.String(), pci.CmdBusMaster)
	if !slices.Contains(skip, "uio") {
		tr.AddUIO(testAddr.String(), 3, 7)
	}
	if slices.Contains(skip, "dev") {
		tr.Remove("dev/uio3")
	}
	if !slices.Contains(skip, "reset") {
		tr.AddReset(testAddr.String())
	}
	return tr
}

// hostDMA returns opts with DMA memory from this process's own pagemap (the fixture tree
// has none, and a symlink to /proc/self would lead out of its root), closed after the
// test.
func hostDMA(t *testing.T, opts Options) Options {
	t.Helper()
	dma, err := NewDMA("/", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dma.Close() })
	opts.DMA = dma
	return opts
}

func command(t *testing.T, tr *pcitest.Tree) uint16 {
	t.Helper()
	return tr.Command(testAddr.String())
}

func setCommand(t *testing.T, tr *pcitest.Tree, v uint16) {
	t.Helper()
	f, err := os.OpenFile(tr.Path("sys/bus/pci/devices/0000:02:00.0/config"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	if _, err := f.WriteAt(b[:], 4); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		root    *pcitest.Tree
		addr    pci.Addr
		is      error
		mention []string
	}{
		{name: "no such device", root: fixture(t, pcihost.DriverUIO), addr: pci.MustParseAddr("0000:03:00.0"), mention: []string{"0000:03:00.0"}},
		{name: "bound to vfio-pci", root: fixture(t, "vfio-pci"), is: ErrNotBound, mention: []string{"vfio-pci", "uiod bind"}},
		{name: "no uio entry", root: fixture(t, pcihost.DriverUIO, "uio"), mention: []string{"no uio device"}},
		{name: "no device node", root: fixture(t, pcihost.DriverUIO, "dev"), is: os.ErrNotExist, mention: []string{"dev/uio3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.addr
			if addr == (pci.Addr{}) {
				addr = testAddr
			}
			testutil.OpenFails(t, func() (*Device, error) { return Open(addr, Options{Root: tt.root.Root}) }, tt.is, tt.mention...)
		})
	}
}

func TestDevice(t *testing.T) {
	root := fixture(t, pcihost.DriverUIO)
	d, err := Open(testAddr, hostDMA(t, Options{Root: root.Root}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Addr() != testAddr || !strings.HasSuffix(d.UIOPath(), "dev/uio3") {
		t.Errorf("Addr %v UIOPath %q", d.Addr(), d.UIOPath())
	}
	dev := root.Path("sys/bus/pci/devices/0000:02:00.0")
	if b, _ := os.ReadFile(filepath.Join(dev, "reset")); string(b) != "1" {
		t.Errorf("reset file holds %q, want 1", b)
	}
	want := uint16(pci.CmdMemory | pci.CmdBusMaster | pci.CmdINTxDisable)
	if got := command(t, root); got != want {
		t.Errorf("command after Open = %#x, want %#x", got, want)
	}
	vid, err := pci.ReadConfig16(d.Config(), pci.CfgDeviceID)
	if err != nil || vid != 0x10c9 {
		t.Errorf("device ID = %#x, %v", vid, err)
	}

	// BARs.
	r, err := d.Region(0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 0x20000 {
		t.Errorf("BAR0 len %#x", r.Len())
	}
	r.Write32(0x8, 0x80080783)
	if r.Read32(0x8) != 0x80080783 {
		t.Error("BAR0 readback")
	}
	if r2, _ := d.Region(0); r2 != r {
		t.Error("second Region(0) mapped again")
	}
	res0, _ := os.ReadFile(filepath.Join(dev, "resource0"))
	if binary.LittleEndian.Uint32(res0[8:]) != 0x80080783 {
		t.Error("BAR0 write did not reach resource0")
	}
	if _, err := d.Region(2); !errors.Is(err, pci.ErrNotSupported) || !strings.Contains(err.Error(), "I/O port") {
		t.Errorf("Region(2) (I/O BAR): %v", err)
	}
	if _, err := d.Region(1); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("Region(1) (absent): %v", err)
	}
	if _, err := d.Region(3); err == nil {
		t.Error("Region(3) without resource3 file succeeded")
	}
	if _, err := d.Region(6); err == nil {
		t.Error("Region(6) succeeded")
	}

	// Interrupts.
	for _, k := range []irq.Kind{irq.MSI, irq.MSIX} {
		if _, err := d.IRQs(k, 1); !errors.Is(err, pci.ErrNotSupported) {
			t.Errorf("IRQs(%v): %v", k, err)
		}
	}
	if _, err := d.IRQs(irq.INTx, 2); err == nil {
		t.Error("IRQs(INTx, 2) succeeded")
	}
	vs, err := d.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Kind != irq.INTx {
		t.Fatalf("vectors %v", vs)
	}
	if command(t, root)&pci.CmdINTxDisable != 0 {
		t.Error("IRQs(INTx, 1) left INTx disabled")
	}
	// The kernel's handler masks INTx; Rearm unmasks it without allocating.
	setCommand(t, root, pci.CmdMemory|pci.CmdBusMaster|pci.CmdINTxDisable)
	if err := vs[0].Rearm(); err != nil {
		t.Fatal(err)
	}
	if got := command(t, root); got != pci.CmdMemory|pci.CmdBusMaster {
		t.Errorf("command after Rearm = %#x", got)
	}
	cf, err := os.OpenFile(filepath.Join(dev, "config"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	masked := []byte{byte(pci.CmdMemory | pci.CmdBusMaster), byte((pci.CmdINTxDisable) >> 8)}
	mask := func() { cf.WriteAt(masked, 4) }
	base := testing.AllocsPerRun(100, mask)
	if n := testing.AllocsPerRun(100, func() { mask(); vs[0].Rearm() }); n != base {
		t.Errorf("Rearm of a masked INTx allocates %v times", n-base)
	}
	if command(t, root)&pci.CmdINTxDisable != 0 {
		t.Error("Rearm left INTx masked")
	}
	if n := testing.AllocsPerRun(100, func() { vs[0].Rearm() }); n != 0 {
		t.Errorf("Rearm of an unmasked INTx allocates %v times", n)
	}
	if _, err := d.IRQs(irq.INTx, 0); err != nil {
		t.Fatal(err)
	}
	if command(t, root)&pci.CmdINTxDisable == 0 {
		t.Error("IRQs(INTx, 0) left INTx enabled")
	}

	// DMA: physical addresses of one page (more needs hugepages).
	// (Unprivileged, pagemap hides frame numbers: say so, but still check Close below.)
	mem, err := d.DMA().Alloc(4096)
	if err != nil {
		t.Logf("DMA through pagemap unavailable here: %v", err)
	} else if mem.IOVA == 0 {
		t.Error("zero physical address")
	}

	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := command(t, root); got&pci.CmdBusMaster != 0 || got&pci.CmdINTxDisable == 0 {
		t.Errorf("command after Close = %#x, want bus master off and INTx disabled", got)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := vs[0].Rearm(); err == nil {
		t.Error("Rearm after Close succeeded")
	}
	if _, err := d.Region(0); err == nil {
		t.Error("Region after Close succeeded")
	}
}

func TestOpenWithoutReset(t *testing.T) {
	root := fixture(t, pcihost.DriverUIO, "reset")
	d, err := Open(testAddr, hostDMA(t, Options{Root: root.Root}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Reset(); !errors.Is(err, pci.ErrNotSupported) {
		t.Errorf("Reset without sysfs reset: %v", err)
	}
}

// TestOpenUnresetKeepsBusMasterOff: a function that was not reset may still have a
// previous user's rings live, so Open must not turn bus mastering on (the fixture's
// command register has it on, as a crashed user would leave it).
func TestOpenUnresetKeepsBusMasterOff(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root *pcitest.Tree)
		opts  Options
	}{
		{name: "no reset file", setup: func(t *testing.T, root *pcitest.Tree) {
			root.Remove("sys/bus/pci/devices/0000:02:00.0/reset")
		}},
		{name: "reset fails", setup: func(t *testing.T, root *pcitest.Tree) {
			p := root.Path("sys/bus/pci/devices/0000:02:00.0/reset")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil { // writing it fails
				t.Fatal(err)
			}
		}},
		{name: "NoReset", opts: Options{NoReset: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fixture(t, pcihost.DriverUIO)
			if tt.setup != nil {
				tt.setup(t, root)
			}
			opts := tt.opts
			opts.Root = root.Root
			d, err := Open(testAddr, hostDMA(t, opts))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			want := uint16(pci.CmdMemory | pci.CmdINTxDisable)
			if got := command(t, root); got != want {
				t.Errorf("command after Open = %#x, want %#x (bus mastering off)", got, want)
			}
		})
	}
}

func TestSharedDMA(t *testing.T) {
	root := fixture(t, pcihost.DriverUIO)
	dma, err := NewDMA("/", 0, nil) // the process's own pagemap: the fixture has none
	if err != nil {
		t.Fatal(err)
	}
	defer dma.Close()
	d, err := Open(testAddr, Options{Root: root.Root, DMA: dma})
	if err != nil {
		t.Fatal(err)
	}
	if d.DMA() != dma {
		t.Error("device does not use the shared allocator")
	}
	mem, err := dma.Alloc(100)
	if err != nil {
		t.Skipf("pagemap: %v", err)
	}
	d.Close()
	// The shared allocator outlives the device.
	if err := dma.Free(mem); err != nil {
		t.Errorf("Free after the device closed: %v", err)
	}
}

func TestParseResource(t *testing.T) {
	bars, err := parseResource(testResource)
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 7 {
		t.Fatalf("%d lines", len(bars))
	}
	want := []struct {
		size  uint64
		flags uint64
	}{{0x20000, 0x40200}, {0, 0}, {0x20, 0x40101}, {0x4000, 0x40200}, {0, 0}, {0, 0}, {0x40000, 0x46200}}
	for i, w := range want {
		if bars[i].size() != w.size || bars[i].flags != w.flags {
			t.Errorf("line %d: size %#x flags %#x, want %#x %#x", i, bars[i].size(), bars[i].flags, w.size, w.flags)
		}
	}
	for _, bad := range []string{
		"",
		"0x1 0x2",
		"0x1 0x2 0x3 0x4",
		"1 2 3",
		"0xg 0x2 0x3",
		"0x10 0x8 0x200",
		"0x0 0xffffffffffffffff 0x200",
		"0x1 0x2 0x3\n\n0x1 0x2 0x3",
	} {
		if _, err := parseResource(bad); err == nil {
			t.Errorf("parseResource(%q) succeeded", bad)
		}
	}
}

func FuzzParseResource(f *testing.F) {
	f.Add(testResource)
	f.Add("0x0 0x0 0x0\n")
	f.Add("0xffffffffffffffff 0xffffffffffffffff 0x200")
	f.Fuzz(func(t *testing.T, s string) {
		bars, err := parseResource(s)
		if err != nil {
			return
		}
		for i, b := range bars {
			if b.end < b.start {
				t.Fatalf("line %d: end before start", i)
			}
			if b.size() == 0 && !(b.start == 0 && b.end == 0) {
				t.Fatalf("line %d: zero size for [%#x, %#x]", i, b.start, b.end)
			}
		}
	})
}

// TestOpenWarns checks that Open logs the project's one uio warning (pcihost.WarnUIO), once.
func TestOpenWarns(t *testing.T) {
	root := fixture(t, pcihost.DriverUIO)
	core, logs := observer.New(zap.WarnLevel)
	d, err := Open(testAddr, hostDMA(t, Options{Root: root.Root, Log: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := logs.FilterMessage(pcihost.WarnUIO).Len(); n != 1 || logs.Len() != 1 {
		t.Errorf("warnings %v, want pcihost.WarnUIO once", logs.All())
	}
}
