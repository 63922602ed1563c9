// Package pcitest builds fixture host trees — sysfs, procfs and pci.ids under a temporary
// root — for code that reads and writes PCI state through pcihost.Host, and provides a fake
// kernel that reacts to binds and unbinds the way Linux does.
//
// A tree has the real layout: functions live under sys/devices/pci<domain>:<bus>/ and are
// linked from sys/bus/pci/devices, drivers under sys/bus/pci/drivers, IOMMU groups under
// sys/kernel/iommu_groups, routes in proc/net/route and proc/net/ipv6_route. Use it as
// pcihost.New(tree.Root) or as uiod's --root.
package pcitest

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tree is a fixture host tree rooted at Root.
type Tree struct {
	// Root is the tree's root directory, the root for pcihost.New and --root.
	Root string

	t       testing.TB
	routes  []string // lines of proc/net/route after the header
	routes6 []string // lines of proc/net/ipv6_route
	native  map[string]string
	sriov   map[string]SRIOV // by PF address, from AddSRIOV
	numVFs  map[string]int   // by PF address: the VFs it has
}

// routeHeader is the first line of /proc/net/route.
const routeHeader = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"

// New returns an empty host tree in t.TempDir(): a PCI bus without functions or drivers,
// an IOMMU that has no groups yet, and empty route tables.
func New(t testing.TB) *Tree {
	t.Helper()
	tr := &Tree{Root: t.TempDir(), t: t, native: map[string]string{}}
	for _, d := range []string{"sys/bus/pci/devices", "sys/bus/pci/drivers", "sys/kernel/iommu_groups", "proc/net", "run"} {
		tr.mkdir(d)
	}
	tr.WriteFile("sys/bus/pci/drivers_probe", "")
	tr.WriteFile("sys/bus/pci/rescan", "")
	tr.writeRoutes()
	return tr
}

// Path returns the absolute path of rel (slash separated) inside the tree.
func (tr *Tree) Path(rel string) string {
	return filepath.Join(tr.Root, filepath.FromSlash(rel))
}

// WriteFile creates or replaces the file rel inside the tree, creating its directory.
func (tr *Tree) WriteFile(rel, content string) {
	tr.t.Helper()
	tr.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(tr.Path(rel), []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// ReadFile returns the content of the file rel inside the tree, "" if it does not exist.
func (tr *Tree) ReadFile(rel string) string {
	b, _ := os.ReadFile(tr.Path(rel))
	return string(b)
}

// Remove removes rel (and everything under it) from the tree.
func (tr *Tree) Remove(rel string) {
	tr.t.Helper()
	if err := os.RemoveAll(tr.Path(rel)); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *Tree) mkdir(rel string) {
	tr.t.Helper()
	if err := os.MkdirAll(tr.Path(rel), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

// symlink makes the link at rel point to target (also relative to the root), with a
// relative target as sysfs uses.
func (tr *Tree) symlink(rel, target string) error {
	from := tr.Path(rel)
	to, err := filepath.Rel(filepath.Dir(from), tr.Path(target))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(from), 0o755); err != nil {
		return err
	}
	return os.Symlink(to, from)
}

// AddDriver registers a PCI driver: sys/bus/pci/drivers/NAME with its bind, unbind,
// new_id and remove_id files. Adding a driver twice is harmless.
func (tr *Tree) AddDriver(name string) {
	tr.t.Helper()
	if err := tr.addDriver(name); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *Tree) addDriver(name string) error {
	dir := tr.Path("sys/bus/pci/drivers/" + name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"bind", "unbind", "new_id", "remove_id", "uevent"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Function describes one PCI function to add to a tree.
type Function struct {
	// Addr is the full address, "0000:03:00.0".
	Addr string
	// Vendor, Device, SubVendor and SubDevice are the ids.
	Vendor, Device, SubVendor, SubDevice uint16
	// Class is the 24-bit class code, e.g. 0x020000 for Ethernet.
	Class uint32
	// Revision is the revision id.
	Revision uint8
	// Driver is the bound driver ("" for none); its directory is created if needed.
	Driver string
	// Native is the driver the fake kernel picks on drivers_probe without an override.
	// "" means Driver, unless Driver is a userspace driver.
	Native string
	// Interfaces are kernel network interfaces, created under net/ (or virtio0/net/ when
	// Virtio is set, as virtio-net does), each with its device link and its
	// sys/class/net link.
	Interfaces []string
	Virtio     bool
	// IOMMUGroup is the function's IOMMU group. Fixture groups are numbered from 1:
	// 0 means the function has no group.
	IOMMUGroup int
	// NUMANode is written to numa_node (use -1 for "unknown", as the kernel does).
	NUMANode int
	// MSIXVectors is the MSI-X table size in config space; 0 means no MSI-X capability.
	MSIXVectors int
	// Files replace or add attribute files by name, e.g. {"vendor": "zzzz\n"}.
	Files map[string]string
}

// devicePath is where the function's directory really lives.
func devicePath(addr string) string {
	return "sys/devices/pci" + addr[:7] + "/" + addr
}

// AddFunction adds a function with its attribute files, config space, driver and IOMMU
// group links and network interfaces.
func (tr *Tree) AddFunction(f Function) {
	tr.t.Helper()
	if len(f.Addr) != 12 {
		tr.t.Fatalf("pcitest: address %q is not DDDD:BB:DD.F", f.Addr)
	}
	dev := devicePath(f.Addr)
	files := map[string]string{
		"vendor":           fmt.Sprintf("0x%04x\n", f.Vendor),
		"device":           fmt.Sprintf("0x%04x\n", f.Device),
		"subsystem_vendor": fmt.Sprintf("0x%04x\n", f.SubVendor),
		"subsystem_device": fmt.Sprintf("0x%04x\n", f.SubDevice),
		"class":            fmt.Sprintf("0x%06x\n", f.Class),
		"revision":         fmt.Sprintf("0x%02x\n", f.Revision),
		"numa_node":        strconv.Itoa(f.NUMANode) + "\n",
		"driver_override":  "(null)\n",
		"enable":           "1\n",
		"irq":              "16\n",
		"config":           string(ConfigSpace(f.Vendor, f.Device, f.Class, f.Revision, f.MSIXVectors)),
	}
	for k, v := range f.Files {
		files[k] = v
	}
	for name, content := range files {
		tr.WriteFile(dev+"/"+name, content)
	}
	tr.must(tr.symlink("sys/bus/pci/devices/"+f.Addr, dev))
	if f.Driver != "" {
		tr.AddDriver(f.Driver)
		tr.must(tr.linkDriver(f.Addr, f.Driver))
	}
	native := f.Native
	if native == "" && !isUserspace(f.Driver) {
		native = f.Driver
	}
	tr.native[f.Addr] = native
	for _, i := range f.Interfaces {
		parent := dev // the interface's device: the function, or virtio-net's virtio0
		if f.Virtio {
			parent = dev + "/virtio0"
		}
		dir := parent + "/net/" + i
		tr.WriteFile(dir+"/address", "52:54:00:12:34:56\n")
		tr.must(tr.symlink(dir+"/device", parent))
		tr.must(tr.symlink("sys/class/net/"+i, dir))
	}
	if f.IOMMUGroup > 0 {
		g := "sys/kernel/iommu_groups/" + strconv.Itoa(f.IOMMUGroup)
		tr.mkdir(g + "/devices")
		tr.must(tr.symlink(g+"/devices/"+f.Addr, dev))
		tr.must(tr.symlink(dev+"/iommu_group", g))
	}
}

func (tr *Tree) must(err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatal(err)
	}
}

// linkDriver makes the function's driver link and the driver's link back.
func (tr *Tree) linkDriver(addr, driver string) error {
	dev := devicePath(addr)
	if err := tr.symlink(dev+"/driver", "sys/bus/pci/drivers/"+driver); err != nil {
		return err
	}
	return tr.symlink("sys/bus/pci/drivers/"+driver+"/"+addr, dev)
}

// unlinkDriver removes both links between a function and its driver.
func (tr *Tree) unlinkDriver(addr, driver string) error {
	if err := os.Remove(tr.Path(devicePath(addr) + "/driver")); err != nil {
		return err
	}
	return os.Remove(tr.Path("sys/bus/pci/drivers/" + driver + "/" + addr))
}

// Driver returns the name the function's driver link points to, "" if it has none.
func (tr *Tree) Driver(addr string) string {
	t, err := os.Readlink(tr.Path("sys/bus/pci/devices/" + addr + "/driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(t)
}

// AddRoute adds a route through iface to proc/net/route (an IPv4 prefix) or
// proc/net/ipv6_route (an IPv6 prefix), in the kernel's format.
func (tr *Tree) AddRoute(iface string, prefix netip.Prefix) {
	tr.t.Helper()
	const up = 0x0001
	if prefix.Addr().Is4() {
		a := prefix.Addr().As4()
		var m [4]byte
		for i := 0; i < prefix.Bits(); i++ {
			m[i/8] |= 0x80 >> (i % 8)
		}
		tr.routes = append(tr.routes, fmt.Sprintf("%s\t%08X\t%08X\t%04X\t0\t0\t100\t%08X\t0\t0\t0",
			iface, binary.NativeEndian.Uint32(a[:]), 0, up, binary.NativeEndian.Uint32(m[:])))
	} else {
		a := prefix.Addr().As16()
		tr.routes6 = append(tr.routes6, fmt.Sprintf("%x %02x %032x %02x %032x %08x %08x %08x %08x %8s",
			a[:], prefix.Bits(), 0, 0, 0, 256, 1, 0, up, iface))
	}
	tr.writeRoutes()
}

func (tr *Tree) writeRoutes() {
	tr.t.Helper()
	var b strings.Builder
	b.WriteString(routeHeader + "\n")
	for _, r := range tr.routes {
		b.WriteString(r + "\n")
	}
	tr.WriteFile("proc/net/route", b.String())
	b.Reset()
	for _, r := range tr.routes6 {
		b.WriteString(r + "\n")
	}
	tr.WriteFile("proc/net/ipv6_route", b.String())
}

// DropIOMMU turns the tree into a host without an IOMMU: no groups, no iommu_group links.
func (tr *Tree) DropIOMMU() {
	tr.t.Helper()
	ents, _ := os.ReadDir(tr.Path("sys/bus/pci/devices"))
	for _, e := range ents {
		tr.Remove("sys/bus/pci/devices/" + e.Name() + "/iommu_group")
	}
	tr.Remove("sys/kernel/iommu_groups")
	tr.mkdir("sys/kernel/iommu_groups")
}

// AddNoIOMMUParam creates the vfio module's enable_unsafe_noiommu_mode parameter ("N"), as
// a kernel with CONFIG_VFIO_NOIOMMU has once vfio is loaded.
func (tr *Tree) AddNoIOMMUParam() {
	tr.WriteFile("sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "N\n")
}

// Snapshot returns every directory, file and symlink in the tree with its content (or
// link target), to check that a command left the tree byte-for-byte unchanged.
func (tr *Tree) Snapshot() map[string]string {
	tr.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(tr.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tr.Root, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(path)
			out[rel] = "-> " + t
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			out[rel] = "file " + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		tr.t.Fatal(err)
	}
	return out
}

// isUserspace reports whether driver is a userspace driver (pcitest cannot import
// pcihost: pcihost's own tests import pcitest). pcihost.UserspaceDrivers lists the same
// names.
func isUserspace(driver string) bool {
	switch driver {
	case "vfio-pci", "uio_pci_generic", "igb_uio":
		return true
	}
	return false
}
