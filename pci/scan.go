package pci

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DeviceInfo describes one PCI function as the host sees it. A field the scan could not
// read keeps its zero value (or -1 where documented) and Err says why; the other fields
// are still filled in.
type DeviceInfo struct {
	Addr              Addr   `json:"address"`
	VendorID          ID     `json:"vendor_id"`
	DeviceID          ID     `json:"device_id"`
	SubsystemVendorID ID     `json:"subsystem_vendor_id"`
	SubsystemDeviceID ID     `json:"subsystem_device_id"`
	Class             Class  `json:"class"`
	Revision          uint8  `json:"revision"`
	VendorName        string `json:"vendor_name"` // "" if pci.ids does not know it
	DeviceName        string `json:"device_name"`
	ClassName         string `json:"class_name"`
	// Driver is the bound driver, "" if none.
	Driver string `json:"driver"`
	// Interfaces are the kernel network interfaces of the function, sorted.
	Interfaces []string `json:"interfaces"`
	// IOMMUGroup is the IOMMU group number, -1 if the function has none.
	IOMMUGroup int `json:"iommu_group"`
	// IOMMUGroupMembers are the other functions in the same group.
	IOMMUGroupMembers []Addr `json:"iommu_group_members"`
	// NUMANode is the function's NUMA node, -1 if unknown.
	NUMANode int `json:"numa_node"`
	// MSIXVectors is the MSI-X table size, 0 without MSI-X, -1 if config space could not
	// be read far enough (unprivileged readers see only its first 64 bytes).
	MSIXVectors int `json:"msix_vectors"`
	// Active is true if one of Interfaces has a non-link-local route: the host is using
	// it, and taking it away would cut that traffic.
	Active bool `json:"active"`
	// Err is why some of the fields could not be read, nil if all were.
	Err error `json:"-"`
}

// MarshalJSON adds the "error" key (the text of Err, "" if none).
func (d DeviceInfo) MarshalJSON() ([]byte, error) {
	type plain DeviceInfo
	var msg string
	if d.Err != nil {
		msg = d.Err.Error()
	}
	return json.Marshal(struct {
		plain
		Error string `json:"error"`
	}{plain(d), msg})
}

// IsUserspace reports whether the function is bound to a userspace I/O driver.
func (d *DeviceInfo) IsUserspace() bool { return IsUserspaceDriver(d.Driver) }

// Scan describes the functions under <root>/sys/bus/pci/devices, sorted by address: the
// network controllers, or every function if all is set. A function whose files cannot be
// read is still listed, with Err set; only an unreadable device directory fails the scan.
func (h *Host) Scan(all bool) ([]DeviceInfo, error) {
	ents, err := os.ReadDir(h.path("sys/bus/pci/devices"))
	if err != nil {
		return nil, fmt.Errorf("scan PCI devices: %w", err)
	}
	active, aerr := h.activeInterfaces()
	var out []DeviceInfo
	for _, e := range ents {
		a, err := ParseAddr(e.Name())
		if err != nil {
			continue // not a function; sysfs holds nothing else here
		}
		d := h.describe(a, active, aerr)
		if !all && d.Err == nil && !d.Class.IsNetwork() {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y DeviceInfo) int { return compareAddr(x.Addr, y.Addr) })
	return out, nil
}

// Device describes one function. It fails only if the function does not exist
// (ErrNoDevice); unreadable details are reported in the result's Err.
func (h *Host) Device(a Addr) (DeviceInfo, error) {
	ok, err := h.exists(a)
	if err != nil {
		return DeviceInfo{}, fmt.Errorf("%s: %w", a, err)
	}
	if !ok {
		return DeviceInfo{}, fmt.Errorf("%w %s (no %s)", ErrNoDevice, a, h.devDir(a))
	}
	active, aerr := h.activeInterfaces()
	return h.describe(a, active, aerr), nil
}

// planTarget describes the function a bind or unbind plan names, or says that it does not
// exist.
func (h *Host) planTarget(a Addr, active map[string]bool, activeErr error) (DeviceInfo, error) {
	ok, err := h.exists(a)
	if err != nil {
		return DeviceInfo{}, fmt.Errorf("%s: %w", a, err)
	}
	if !ok {
		return DeviceInfo{}, fmt.Errorf("%w %s (no %s)", ErrNoDevice, a, h.devDir(a))
	}
	return h.describe(a, active, activeErr), nil
}

// describe reads everything about one function, collecting the errors.
func (h *Host) describe(a Addr, active map[string]bool, activeErr error) DeviceInfo {
	dir := h.devDir(a)
	d := DeviceInfo{Addr: a, IOMMUGroup: -1, NUMANode: -1, Interfaces: []string{}, IOMMUGroupMembers: []Addr{}}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	idAttr := func(name string, dst *ID) {
		add(readAttr(dir, name, func(b []byte) error {
			v, err := parseID(b)
			*dst = ID(v)
			return err
		}))
	}
	idAttr("vendor", &d.VendorID)
	idAttr("device", &d.DeviceID)
	idAttr("subsystem_vendor", &d.SubsystemVendorID)
	idAttr("subsystem_device", &d.SubsystemDeviceID)
	add(readAttr(dir, "class", func(b []byte) (err error) { d.Class, err = parseClass(b); return }))
	add(readAttr(dir, "revision", func(b []byte) (err error) { d.Revision, err = parseRevision(b); return }))
	err := readAttr(dir, "numa_node", func(b []byte) (err error) { d.NUMANode, err = parseInt(b); return })
	if !errors.Is(err, os.ErrNotExist) { // kernels without NUMA have no numa_node
		add(err)
	}

	names := h.names()
	if d.VendorID != 0 {
		d.VendorName = names.vendor(d.VendorID)
		d.DeviceName = names.product(d.VendorID, d.DeviceID)
	}
	d.ClassName = names.class(d.Class)

	drv, err := linkBase(filepath.Join(dir, "driver"))
	if err != nil {
		add(fmt.Errorf("read driver link: %w", err))
	}
	d.Driver = drv

	ifs, err := netInterfaces(dir)
	add(err)
	d.Interfaces = ifs
	if len(ifs) > 0 {
		if activeErr != nil {
			add(activeErr)
		}
		for _, i := range ifs {
			d.Active = d.Active || active[i]
		}
	}

	d.IOMMUGroup, err = h.iommuGroup(a)
	add(err)
	if d.IOMMUGroup >= 0 {
		members, err := h.iommuGroupMembers(d.IOMMUGroup)
		add(err)
		for _, m := range members {
			if m != a {
				d.IOMMUGroupMembers = append(d.IOMMUGroupMembers, m)
			}
		}
	}

	d.MSIXVectors, err = msixVectors(dir)
	add(err)

	if len(errs) > 0 {
		d.Err = fmt.Errorf("%s: %w", a, errors.Join(errs...))
	}
	return d
}

// netInterfaces lists the kernel network interfaces of the function: the entries of its
// net directory, and of virtio*/net for virtio devices, whose interface hangs off the
// virtio child device.
func netInterfaces(dir string) ([]string, error) {
	out := []string{}
	dirs := []string{filepath.Join(dir, "net")}
	virtio, _ := filepath.Glob(filepath.Join(dir, "virtio*", "net"))
	dirs = append(dirs, virtio...)
	for _, nd := range dirs {
		ents, err := os.ReadDir(nd)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read net interfaces: %w", err)
		}
		for _, e := range ents {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// msixVectors reads the function's config file and returns its MSI-X table size.
func msixVectors(dir string) (int, error) {
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("read config: %w", err)
	}
	n, err := MSIXTableSize(cfg)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, ErrNoCapability):
		return 0, nil
	case errors.Is(err, ErrTruncated) && len(cfg) >= 64:
		return -1, nil // an unprivileged read: unknown, not wrong
	}
	return -1, fmt.Errorf("config: %w", err)
}

// userspaceDrivers are the drivers that hand a function to a userspace driver.
var userspaceDrivers = []string{"vfio-pci", "uio_pci_generic"}

// IsUserspaceDriver reports whether driver hands its functions to userspace
// (vfio-pci, uio_pci_generic).
func IsUserspaceDriver(driver string) bool { return slices.Contains(userspaceDrivers, driver) }

// ValidDriverName reports an error unless name can be a kernel driver name: a single path
// element of letters, digits, '-' and '_' that does not start with '-' (it is also the
// module name given to modprobe, which would take it for an option).
func ValidDriverName(name string) error {
	if name == "" {
		return errors.New("driver name is empty")
	}
	if len(name) > 64 || name[0] == '-' || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("invalid driver name %q: want letters, digits, '-' and '_', not starting with '-'", name)
	}
	return nil
}
