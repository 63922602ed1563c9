// Package uio opens PCI functions bound to uio_pci_generic and returns them as
// pci.Device: BARs mapped from sysfs resourceN files, configuration space through the
// sysfs config file, INTx through /dev/uioN, and DMA memory addressed by physical
// address (from /proc/self/pagemap).
//
// uio gives no DMA isolation: the device can write anywhere in physical memory, and if the
// process dies nothing stops the device from writing to pages the kernel has reused.
// Prefer vfio-pci; use uio only where VFIO is unavailable.
//
// The package is split by concern: opening the device and its BARs (device_linux.go),
// config space and INTx (config_linux.go), physical-address DMA memory (dma.go).
package uio

import (
	"go.uber.org/zap"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// Errors callers may match with errors.Is.
var (
	// ErrNotBound means the device is not bound to uio_pci_generic. It is pcihost.ErrNotBound.
	ErrNotBound = pcihost.ErrNotBound
	// ErrNotSupported means uio cannot do what was asked (MSI/MSI-X, I/O port BARs). It
	// is pci.ErrNotSupported.
	ErrNotSupported = pci.ErrNotSupported
)

// Options configure Open.
type Options struct {
	// Root prefixes every host path ("/" when empty).
	Root string
	// DMA, if set, is a physical-address allocator shared with other devices (see
	// NewDMA); the device does not close it. Otherwise the device gets its own, which
	// Close releases.
	DMA *DMA
	// HugePages is the page policy of the device's own allocator.
	HugePages dmamem.HugePages
	// NoReset skips the function reset on open (bus mastering then stays off).
	NoReset bool
	// Log receives warnings. Nil discards them.
	Log *zap.Logger
}
