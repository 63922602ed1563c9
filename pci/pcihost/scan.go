package pcihost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/uiod/uiod/pci"
)

// DeviceInfo describes one PCI function as the host sees it. A field the scan could not
// read keeps its zero value (or -1 where documented) and Err says why; the other fields
// are still filled in.
type DeviceInfo struct {
	Addr              pci.Addr  `json:"address"`
	VendorID          pci.ID    `json:"vendor_id"`
	DeviceID          pci.ID    `json:"device_id"`
	SubsystemVendorID pci.ID    `json:"subsystem_vendor_id"`
	SubsystemDeviceID pci.ID    `json:"subsystem_device_id"`
	Class             pci.Class `json:"class"`
	Revision          uint8     `json:"revision"`
	VendorName        string    `json:"vendor_name"` // "" if pci.ids does not know it
	DeviceName        string    `json:"device_name"`
	ClassName         string    `json:"class_name"`
	// Driver is the bound driver, "" if none.
	Driver string `json:"driver"`
	// Interfaces are the kernel network interfaces of the function, sorted.
	Interfaces []string `json:"interfaces"`
	// IOMMUGroup is the IOMMU group number, -1 if the function has none.
	IOMMUGroup int `json:"iommu_group"`
	// IOMMUGroupMembers are the other functions in the same group.
	IOMMUGroupMembers []pci.Addr `json:"iommu_group_members"`
	// NUMANode is the function's NUMA node, -1 if unknown.
	NUMANode int `json:"numa_node"`
	// MSIXVectors is the MSI-X table size, 0 without MSI-X, -1 if config space could not
	// be read far enough (unprivileged readers see only its first 64 bytes).
	MSIXVectors int `json:"msix_vectors"`
	// Active is true if one of Interfaces has a non-link-local route: the host is using
	// it, and taking it away would cut that traffic.
	Active bool `json:"active"`
	// PhysFn is the physical function of a virtual function, nil for any other.
	PhysFn *pci.Addr `json:"physfn"`
	// SRIOV is the SR-IOV state of a physical function with the capability, nil otherwise.
	SRIOV *SRIOV `json:"sriov"`
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
	ents, err := h.readDir(devicesDir)
	if err != nil {
		return nil, fmt.Errorf("scan PCI devices: %w", err)
	}
	active, aerr := h.activeInterfaces()
	var out []DeviceInfo
	for _, e := range ents {
		a, err := pci.ParseAddr(e.Name())
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
func (h *Host) Device(a pci.Addr) (DeviceInfo, error) {
	active, aerr := h.activeInterfaces()
	return h.deviceInfo(a, active, aerr)
}

// errActive refuses function a, whose interfaces have routes.
func errActive(a pci.Addr, interfaces []string) error {
	return fmt.Errorf("%s is active: interface %s has routes (use --force to take it from the host anyway)",
		a, strings.Join(interfaces, ", "))
}

// deviceInfo describes function a (for Device, or a bind or unbind plan), or
// says that it does not exist.
func (h *Host) deviceInfo(a pci.Addr, active map[string]bool, activeErr error) (DeviceInfo, error) {
	if err := h.requireDevice(a); err != nil {
		return DeviceInfo{}, err
	}
	return h.describe(a, active, activeErr), nil
}

// describe reads everything about one function, collecting the errors.
func (h *Host) describe(a pci.Addr, active map[string]bool, activeErr error) DeviceInfo {
	d := DeviceInfo{Addr: a, IOMMUGroup: -1, NUMANode: -1, Interfaces: []string{}, IOMMUGroupMembers: []pci.Addr{}}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	idAttr := func(name string, dst *pci.ID) {
		add(h.readAttr(a, name, func(b []byte) error {
			v, err := parseID(b)
			*dst = pci.ID(v)
			return err
		}))
	}
	idAttr("vendor", &d.VendorID)
	idAttr("device", &d.DeviceID)
	idAttr("subsystem_vendor", &d.SubsystemVendorID)
	idAttr("subsystem_device", &d.SubsystemDeviceID)
	add(h.readAttr(a, "class", func(b []byte) (err error) { d.Class, err = parseClass(b); return }))
	add(h.readAttr(a, "revision", func(b []byte) (err error) { d.Revision, err = parseRevision(b); return }))
	err := h.readAttr(a, "numa_node", func(b []byte) (err error) { d.NUMANode, err = parseInt(b); return })
	if !errors.Is(err, os.ErrNotExist) { // kernels without NUMA have no numa_node
		add(err)
	}

	names := h.names()
	if d.VendorID != 0 {
		d.VendorName = names.vendor(d.VendorID)
		d.DeviceName = names.product(d.VendorID, d.DeviceID)
	}
	d.ClassName = names.class(d.Class)

	drv, err := h.Driver(a)
	add(err)
	d.Driver = drv

	ifs, err := h.netInterfaces(a)
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

	iommuOn, iommuErr := h.iommuEnabled()
	group, members, err := h.iommuGroupOf(a, iommuOn, iommuErr)
	add(err)
	d.IOMMUGroup = group
	d.IOMMUGroupMembers = append(d.IOMMUGroupMembers, members...)

	d.MSIXVectors, err = h.msixVectors(a)
	add(err)

	add(h.describeSRIOV(&d))

	if len(errs) > 0 {
		d.Err = fmt.Errorf("%s: %w", a, errors.Join(errs...))
	}
	return d
}

// netInterfaces lists the kernel network interfaces of the function: the entries of its
// net directory, and of virtio*/net for virtio devices, whose interface hangs off the
// virtio child device.
func (h *Host) netInterfaces(a pci.Addr) ([]string, error) {
	out := []string{}
	dirs := []string{deviceRel(a, "net")}
	ents, err := h.readDir(deviceRel(a))
	if err != nil {
		return out, fmt.Errorf("read device directory: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "virtio") {
			dirs = append(dirs, deviceRel(a, e.Name(), "net"))
		}
	}
	for _, nd := range dirs {
		ents, err := h.readDir(nd)
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
func (h *Host) msixVectors(a pci.Addr) (int, error) {
	// Every PCI function has a config file: a missing one is a tree being torn down or
	// tampered with, and is reported like any other unreadable file.
	cfg, err := h.ReadDeviceFile(a, "config", MaxConfigSize)
	if err != nil {
		return -1, fmt.Errorf("read config: %w", err)
	}
	n, err := pci.MSIXTableSize(cfg)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, pci.ErrNoCapability):
		return 0, nil
	case errors.Is(err, pci.ErrTruncated) && len(cfg) >= 64:
		return -1, nil // an unprivileged read: unknown, not wrong
	}
	return -1, fmt.Errorf("config: %w", err)
}
