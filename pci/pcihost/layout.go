package pcihost

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
)

// The sysfs, procfs and /dev layout, relative to the host root. This file is the only
// place that knows it; the backends (vfio, uio) ask a Host for what they need.
const (
	devicesDir     = "sys/bus/pci/devices"
	driversDir     = "sys/bus/pci/drivers"
	driversProbe   = "sys/bus/pci/drivers_probe"
	iommuGroupsDir = "sys/kernel/iommu_groups"
	// noIOMMUParam is the vfio module parameter that allows groups without an IOMMU.
	noIOMMUParam = "sys/module/vfio/parameters/enable_unsafe_noiommu_mode"
	vfioDevDir   = "dev/vfio"
	// VFIOContainerDev and IOMMUFDDev are the VFIO container and iommufd nodes.
	VFIOContainerDev = "dev/vfio/vfio"
	IOMMUFDDev       = "dev/iommu"
)

// deviceRel returns the root-relative sysfs directory of a function, or a file in it.
func deviceRel(a pci.Addr, name ...string) string {
	return path.Join(append([]string{devicesDir, a.String()}, name...)...)
}

// driverRel returns the root-relative sysfs directory of a driver, or a file in it.
func driverRel(driver string, name ...string) string {
	return path.Join(append([]string{driversDir, driver}, name...)...)
}

// devDir returns the sysfs directory of a function, for messages and plans.
func (h *Host) devDir(a pci.Addr) string { return h.path(deviceRel(a)) }

// driverDir returns the sysfs directory of a PCI driver, for messages and plans.
func (h *Host) driverDir(driver string) string { return h.path(driverRel(driver)) }

// DeviceDir returns the sysfs directory of a function under Root (for messages: open
// its files with OpenDeviceFile).
func (h *Host) DeviceDir(a pci.Addr) string { return h.devDir(a) }

// DevicePath returns the path of a file in a function's sysfs directory ("config",
// "resource0", "reset"), resolved inside Root.
func (h *Host) DevicePath(a pci.Addr, name string) (string, error) { return h.Path(deviceRel(a, name)) }

// OpenDeviceFile opens a file in a function's sysfs directory ("config", "resource0")
// with flag, refusing anything but a regular file (sysfs attributes are). It never blocks.
func (h *Host) OpenDeviceFile(a pci.Addr, name string, flag int) (*os.File, error) {
	f, err := h.OpenFile(deviceRel(a, name), flag|oNonblock|oNoCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file (%s)", f.Name(), fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadDeviceFile reads a file of a function's sysfs directory, at most max bytes.
func (h *Host) ReadDeviceFile(a pci.Addr, name string, max int) ([]byte, error) {
	return h.ReadFile(deviceRel(a, name), max)
}

// HasDeviceFile reports whether a function's sysfs directory has the file (an
// attribute the kernel offers, such as reset).
func (h *Host) HasDeviceFile(a pci.Addr, name string) (bool, error) {
	_, err := h.stat(deviceRel(a, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// readLinkBase returns the last element of the symlink rel, "" if there is none. A link
// whose target does not resolve inside Root (missing, or leading out) is an error: the
// kernel never leaves a dangling driver or iommu_group link, so one means the tree is
// being tampered with or torn down.
func (h *Host) readLinkBase(rel string) (string, error) {
	p, err := containedPath(h.root, rel, false)
	if err != nil {
		return "", err
	}
	t, err := os.Readlink(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if _, err := h.stat(rel); err != nil {
		return "", fmt.Errorf("%s is a dangling link (to %s): %w", p, t, err)
	}
	return path.Base(t), nil
}

// Driver returns the driver bound to a function, "" if none. A dangling driver link is
// an error.
func (h *Host) Driver(a pci.Addr) (string, error) {
	drv, err := h.readLinkBase(deviceRel(a, "driver"))
	if err != nil {
		return "", fmt.Errorf("%s: read driver link: %w", a, err)
	}
	return drv, nil
}

// CheckBound verifies that the function exists (else ErrNoDevice) and is bound to
// driver (else ErrNotBound, with the command that binds it).
func (h *Host) CheckBound(a pci.Addr, driver string) error {
	ok, err := h.exists(a)
	if err != nil {
		return fmt.Errorf("device %s: %w", a, err)
	}
	if !ok {
		return fmt.Errorf("device %s: %w (no %s)", a, ErrNoDevice, h.devDir(a))
	}
	drv, err := h.Driver(a)
	if err != nil {
		return err
	}
	if drv != driver {
		if drv == "" {
			drv = "no driver"
		}
		return fmt.Errorf("device %s is bound to %s: %w %s (bind it with `uiod bind --driver %s %s`)", a, drv, ErrNotBound, driver, driver, a)
	}
	return nil
}

// IOMMUGroup returns the function's IOMMU group number, or -1 if it has none.
func (h *Host) IOMMUGroup(a pci.Addr) (int, error) {
	name, err := h.readLinkBase(deviceRel(a, "iommu_group"))
	if err != nil {
		return -1, fmt.Errorf("read iommu_group: %w", err)
	}
	if name == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(name)
	if err != nil || n < 0 || strconv.Itoa(n) != name {
		return -1, fmt.Errorf("iommu_group: %w link target %s", pci.ErrMalformed, clip.Quote(name))
	}
	return n, nil
}

// UIODevice returns the path under Root of the /dev/uioN node of a function bound to a
// UIO driver: the name is the one entry uioN of the function's uio directory.
func (h *Host) UIODevice(a pci.Addr) (string, error) {
	ents, err := h.readDir(deviceRel(a, "uio"))
	if err != nil {
		return "", fmt.Errorf("no uio device: %w", err)
	}
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "uio"); ok && validIndex(n) {
			return h.Path("dev/" + e.Name())
		}
	}
	return "", fmt.Errorf("no uioN entry in %s", h.path(deviceRel(a, "uio")))
}

// VFIOGroupDevice returns the path under Root of a VFIO group's node: /dev/vfio/N, or
// /dev/vfio/noiommu-N (noIOMMU true) for a group of vfio's no-IOMMU mode.
func (h *Host) VFIOGroupDevice(group int) (p string, noIOMMU bool, err error) {
	name := strconv.Itoa(group)
	rel := path.Join(vfioDevDir, name)
	if _, err := h.stat(rel); err != nil {
		if _, nerr := h.stat(path.Join(vfioDevDir, "noiommu-"+name)); nerr == nil {
			p, err := h.Path(path.Join(vfioDevDir, "noiommu-"+name))
			return p, true, err
		}
	}
	p, err = h.Path(rel)
	return p, false, err
}

// VFIOCdev returns the path under Root of a function's VFIO device cdev
// (/dev/vfio/devices/vfioN), wrapping ErrNotSupported when the kernel has none.
func (h *Host) VFIOCdev(a pci.Addr) (string, error) {
	dir := deviceRel(a, "vfio-dev")
	ents, err := h.readDir(dir)
	if err != nil {
		return "", fmt.Errorf("device %s has no VFIO cdev (kernel without CONFIG_VFIO_DEVICE_CDEV?): %w", a, pci.ErrNotSupported)
	}
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "vfio"); ok && validIndex(n) {
			return h.Path(path.Join(vfioDevDir, "devices", e.Name()))
		}
	}
	return "", fmt.Errorf("device %s: no vfioN entry in %s: %w", a, h.path(dir), pci.ErrNotSupported)
}

// HasDev reports whether the node rel ("dev/vfio/vfio", "dev/iommu") exists under Root.
func (h *Host) HasDev(rel string) bool {
	_, err := h.stat(rel)
	return err == nil
}

// validIndex reports whether s is a decimal device index ("0", "12").
func validIndex(s string) bool {
	return s != "" && len(s) <= 9 && strings.Trim(s, "0123456789") == ""
}

// ResetFunction resets a function through its sysfs reset attribute, wrapping
// ErrNotSupported when the kernel offers none for it.
func (h *Host) ResetFunction(a pci.Addr) error {
	ok, err := h.HasDeviceFile(a, "reset")
	if err != nil {
		return fmt.Errorf("reset %s: %w", a, err)
	}
	if !ok {
		return fmt.Errorf("reset %s: no %s: %w", a, h.path(deviceRel(a, "reset")), pci.ErrNotSupported)
	}
	if err := h.write(h.path(deviceRel(a, "reset")), "1"); err != nil {
		return fmt.Errorf("reset %s: %w", a, err)
	}
	return nil
}
