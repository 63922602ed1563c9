package vfio

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uiod/uiod/pci"
)

const vfioDriver = "vfio-pci"

// sysDevice is the sysfs directory of a PCI function under root.
func sysDevice(root string, addr pci.Addr) string {
	return filepath.Join(root, "sys/bus/pci/devices", addr.String())
}

// checkBound verifies that the function exists and is bound to vfio-pci.
func checkBound(root string, addr pci.Addr) error {
	dir := sysDevice(root, addr)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("device %s: %w", addr, err)
	}
	drv, err := driverOf(dir)
	if err != nil {
		return fmt.Errorf("device %s: %w", addr, err)
	}
	if drv != vfioDriver {
		if drv == "" {
			drv = "no driver"
		}
		return fmt.Errorf("device %s is bound to %s: %w (bind it with `uiod bind %s vfio-pci`)", addr, drv, ErrNotBound, addr)
	}
	return nil
}

// driverOf returns the name of the driver bound to the sysfs device dir, "" if none.
func driverOf(dir string) (string, error) {
	l, err := os.Readlink(filepath.Join(dir, "driver"))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read driver link: %w", err)
	}
	return filepath.Base(l), nil
}

// iommuGroup returns the IOMMU group number of a function.
func iommuGroup(root string, addr pci.Addr) (int, error) {
	l, err := os.Readlink(filepath.Join(sysDevice(root, addr), "iommu_group"))
	if err != nil {
		return 0, fmt.Errorf("device %s has no IOMMU group (IOMMU disabled? for no-IOMMU mode set vfio's enable_unsafe_noiommu_mode before binding): %w", addr, err)
	}
	n, err := strconv.Atoi(filepath.Base(l))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("device %s: bad IOMMU group link %q", addr, l)
	}
	return n, nil
}

// groupMembers describes the functions of an IOMMU group and their drivers, for the
// not-viable error.
func groupMembers(root string, group int) string {
	dir := filepath.Join(root, "sys/kernel/iommu_groups", strconv.Itoa(group), "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "members unknown: " + err.Error()
	}
	var parts []string
	for _, e := range ents {
		drv, _ := driverOf(filepath.Join(dir, e.Name()))
		if drv == "" {
			drv = "no driver"
		}
		parts = append(parts, e.Name()+" ("+drv+")")
	}
	return strings.Join(parts, ", ")
}

// cdevName returns the name of the function's VFIO device cdev ("vfio3").
func cdevName(root string, addr pci.Addr) (string, error) {
	dir := filepath.Join(sysDevice(root, addr), "vfio-dev")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("device %s has no VFIO cdev (kernel without CONFIG_VFIO_DEVICE_CDEV?): %w", addr, ErrNotSupported)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "vfio") {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("device %s: empty %s: %w", addr, dir, ErrNotSupported)
}
