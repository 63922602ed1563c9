//go:build !linux

package uio

import (
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// errNoUIO is what every open returns where there is no UIO.
var errNoUIO = fmt.Errorf("uio: only on Linux: %w", pci.ErrNotSupported)

// Device is a function opened through uio_pci_generic; only Linux has one.
type Device struct{}

var _ pci.Device = (*Device)(nil)

// Open fails: UIO is a Linux interface.
func Open(addr pci.Addr, opts Options) (*Device, error) { return nil, errNoUIO }

// Addr returns the zero address.
func (d *Device) Addr() pci.Addr { return pci.Addr{} }

// UIOPath returns "".
func (d *Device) UIOPath() string { return "" }

// Region fails.
func (d *Device) Region(bar int) (pci.Region, error) { return nil, errNoUIO }

// Config returns nil.
func (d *Device) Config() pci.ConfigSpace { return nil }

// DMA returns nil.
func (d *Device) DMA() pci.DMA { return nil }

// IRQs fails.
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) { return nil, errNoUIO }

// Reset fails.
func (d *Device) Reset() error { return errNoUIO }

// Close does nothing.
func (d *Device) Close() error { return nil }
