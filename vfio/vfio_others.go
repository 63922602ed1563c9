//go:build !linux

package vfio

import (
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// errNoVFIO is what every open returns where there is no VFIO.
var errNoVFIO = fmt.Errorf("vfio: only on Linux: %w", pci.ErrNotSupported)

// Container is a DMA address space shared by devices; only Linux has one.
type Container struct{}

// NewContainer fails: VFIO is a Linux interface.
func NewContainer(opts Options) (*Container, error) { return nil, errNoVFIO }

// DMA returns nil.
func (c *Container) DMA() pci.DMA { return nil }

// NoIOMMU returns false.
func (c *Container) NoIOMMU() bool { return false }

// Mode returns ModeAuto.
func (c *Container) Mode() Mode { return ModeAuto }

// Open fails: VFIO is a Linux interface.
func (c *Container) Open(addr pci.Addr) (*Device, error) { return nil, errNoVFIO }

// Close does nothing.
func (c *Container) Close() error { return nil }

// Device is a function opened through VFIO; only Linux has one.
type Device struct{}

var _ pci.Device = (*Device)(nil)

// Open fails: VFIO is a Linux interface.
func Open(addr pci.Addr, opts Options) (*Device, error) { return nil, errNoVFIO }

// Addr returns the zero address.
func (d *Device) Addr() pci.Addr { return pci.Addr{} }

// Container returns nil.
func (d *Device) Container() *Container { return nil }

// Region fails.
func (d *Device) Region(bar int) (pci.Region, error) { return nil, errNoVFIO }

// Config returns nil.
func (d *Device) Config() pci.ConfigSpace { return nil }

// DMA returns nil.
func (d *Device) DMA() pci.DMA { return nil }

// IRQInfo fails.
func (d *Device) IRQInfo(kind irq.Kind) (int, error) { return 0, errNoVFIO }

// IRQs fails.
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) { return nil, errNoVFIO }

// Reset fails.
func (d *Device) Reset() error { return errNoVFIO }

// Close does nothing.
func (d *Device) Close() error { return nil }

// Events fails: VFIO is a Linux interface.
func (d *Device) Events() (<-chan pci.Event, error) { return nil, errNoVFIO }
