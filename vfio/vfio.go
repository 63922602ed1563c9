// Package vfio opens PCI functions bound to vfio-pci and returns them as pci.Device:
// BARs mapped into the process, configuration space through the device's config region,
// DMA memory mapped into the device's IOMMU address space, and interrupts (MSI-X, MSI,
// INTx) delivered to eventfds.
//
// Three kernel interfaces are supported, chosen by Mode:
//   - the type1 container/group interface (/dev/vfio/vfio + /dev/vfio/N), the common case;
//   - no-IOMMU groups (/dev/vfio/noiommu-N, vfio's enable_unsafe_noiommu_mode): no DMA
//     isolation, bus addresses are physical addresses from /proc/self/pagemap;
//   - the device cdev with iommufd (/dev/vfio/devices/vfioN + /dev/iommu).
//
// Each is one file behind the container's backend interface: group_linux.go (which picks
// type1_linux.go or noiommu_linux.go when the first group joins) and iommufd_linux.go.
//
// A Container is one DMA address space. Devices opened through the same Container share
// its DMA allocator, so a buffer allocated for one can be handed to the other.
// Every host path is taken relative to Options.Root.
package vfio

import (
	"cmp"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci/pcihost"
)

// Errors callers may match with errors.Is.
var (
	// ErrNoVFIO means the kernel offers no VFIO interface under the root.
	ErrNoVFIO = errors.New("vfio not available")
	// ErrNotBound means the device is not bound to vfio-pci. It is pcihost.ErrNotBound.
	ErrNotBound = pcihost.ErrNotBound
	// ErrNotViable means a device of the IOMMU group is bound to a host driver.
	ErrNotViable = errors.New("iommu group not viable")
)

// Mode selects the kernel interface.
type Mode int

const (
	// ModeAuto uses the group interface when /dev/vfio/vfio exists, else the cdev
	// interface with iommufd.
	ModeAuto Mode = iota
	// ModeGroup uses /dev/vfio/vfio and a type1 or no-IOMMU group.
	ModeGroup
	// ModeIOMMUFD uses the device cdev /dev/vfio/devices/vfioN and /dev/iommu.
	ModeIOMMUFD
)

// modeNames are the modes' names, indexed by Mode.
var modeNames = [...]string{
	ModeAuto:    "auto",
	ModeGroup:   "group",
	ModeIOMMUFD: "iommufd",
}

// String returns the mode's name.
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("vfio.Mode(%d)", int(m))
}

// Options configure how devices are opened.
type Options struct {
	// Root prefixes every host path ("/" when empty).
	Root string
	// Mode selects the kernel interface (default ModeAuto).
	Mode Mode
	// HugePages is the DMA memory page policy.
	HugePages dmamem.HugePages
	// NoReset skips the function reset on open.
	NoReset bool
	// Log receives warnings (no-IOMMU, hugepage fallback, failed reset). Nil discards.
	Log *zap.Logger
}

// host returns the PCI host under the root.
func (o Options) host() (*pcihost.Host, error) { return pcihost.New(cmp.Or(o.Root, "/")) }

func (o Options) log() *zap.Logger {
	if o.Log == nil {
		return zap.NewNop()
	}
	return o.Log
}
