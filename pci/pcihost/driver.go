package pcihost

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/uiod/uiod/internal/clip"
)

// Names of the PCI drivers uiod knows by name. They are the directory names under
// /sys/bus/pci/drivers and the names config and the CLI accept.
const (
	// DriverVFIO hands a function to userspace through VFIO, behind the IOMMU.
	DriverVFIO = "vfio-pci"
	// DriverUIO hands a function to userspace through UIO, with no DMA isolation.
	DriverUIO = "uio_pci_generic"
	// DriverIGBUIO is DPDK's out-of-tree UIO driver (no DMA isolation either).
	DriverIGBUIO = "igb_uio"
	// DriverPCIStub is the kernel's placeholder driver: it claims a function so that no
	// host driver does, and keeps a VFIO group viable.
	DriverPCIStub = "pci-stub"
)

// UserspaceDrivers are the drivers that hand a function to a userspace driver.
var UserspaceDrivers = []string{DriverVFIO, DriverUIO, DriverIGBUIO}

// IsUserspaceDriver reports whether driver hands its functions to userspace
// (vfio-pci, uio_pci_generic, igb_uio).
func IsUserspaceDriver(driver string) bool { return slices.Contains(UserspaceDrivers, driver) }

// ErrNotBound is wrapped by errors about a function that is not bound to the driver an
// operation needs (a backend opening it, a quiesce that finds it on a host driver).
var ErrNotBound = errors.New("not bound to")

// ValidDriverName reports an error unless name can be a kernel driver name: a single path
// element of letters, digits, '-' and '_' that does not start with '-' (it is also the
// module name given to modprobe, which would take it for an option).
func ValidDriverName(name string) error {
	if name == "" {
		return errors.New("driver name is empty")
	}
	if len(name) > 64 || name[0] == '-' || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("invalid driver name %s: want letters, digits, '-' and '_', not starting with '-'", clip.Quote(name))
	}
	return nil
}
