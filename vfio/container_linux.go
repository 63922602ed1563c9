package vfio

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// backend is one kernel interface that gives devices a DMA address space: the group
// interface (group.go, which then uses type1.go or noiommu.go) or iommufd (iommufd.go).
// Its methods are called with the container's mutex held.
type backend interface {
	// attach adds the function to the address space and returns its device fd.
	attach(addr pci.Addr) (int, error)
	// space is the address space's DMA mapper, nil until the first device is attached.
	space() dmaSpace
	// close releases the backend's descriptors; every mapping is gone by then.
	close() error
}

// dmaSpace maps pinned memory into an address space and says what the kernel allows.
type dmaSpace interface {
	// dmaMap returns the bus address at which the device sees b.
	dmaMap(b []byte) (uint64, error)
	// dmaUnmap withdraws the device's access to b, which dmaMap mapped at busAddr.
	dmaUnmap(b []byte, busAddr uint64) error
	// restrict narrows the usable IOVA space to what the kernel accepts now, after a
	// group or device joined.
	restrict() error
	// noIOMMU reports whether bus addresses are physical addresses, untranslated.
	noIOMMU() bool
	// close releases what the space holds beyond its mappings.
	close() error
}

// Container is one DMA address space shared by the devices opened through it: a VFIO
// container (group interface) or an iommufd IOAS (cdev interface). It is safe for
// concurrent use.
type Container struct {
	opts Options
	host *pcihost.Host
	log  *zap.Logger
	mode Mode // resolved: ModeGroup or ModeIOMMUFD

	mu      sync.Mutex
	be      backend
	devices map[*Device]struct{}
	dma     *dmamem.Allocator
	closed  bool
}

// NewContainer opens an empty DMA address space. Devices join it with Open.
func NewContainer(opts Options) (*Container, error) {
	host, err := opts.host()
	if err != nil {
		return nil, err
	}
	c := &Container{opts: opts, host: host, log: opts.log(), devices: make(map[*Device]struct{})}
	c.mode = opts.Mode
	if c.mode == ModeAuto {
		switch {
		case host.HasDev(pcihost.VFIOContainerDev):
			c.mode = ModeGroup
		case host.HasDev(pcihost.IOMMUFDDev):
			c.mode = ModeIOMMUFD
		default:
			return nil, fmt.Errorf("neither %s nor %s exists (load vfio-pci: modprobe vfio-pci): %w",
				strings.TrimSuffix(host.Root(), "/")+"/"+pcihost.VFIOContainerDev, strings.TrimSuffix(host.Root(), "/")+"/"+pcihost.IOMMUFDDev, ErrNoVFIO)
		}
	}
	switch c.mode {
	case ModeGroup:
		c.be, err = openGroupBackend(host, c.log)
	case ModeIOMMUFD:
		c.be, err = openIOMMUFD(host)
	default:
		err = fmt.Errorf("unknown vfio mode %v", c.mode)
	}
	if err != nil {
		return nil, err
	}
	c.dma = dmamem.New(containerMapper{c}, dmamem.Options{HugePages: opts.HugePages, Log: c.log})
	return c, nil
}

// openNode opens a VFIO or iommufd node, marking a missing one ErrNoVFIO.
func openNode(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %w", err, ErrNoVFIO)
		}
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, nil
}

// DMA returns the allocator of memory that every device of the container can reach.
func (c *Container) DMA() pci.DMA { return c.dma }

// NoIOMMU reports whether the container has no IOMMU translation (a no-IOMMU group):
// devices can reach all of memory, and bus addresses are physical addresses.
func (c *Container) NoIOMMU() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.be.space()
	return s != nil && s.noIOMMU()
}

// Mode returns the kernel interface the container uses (never ModeAuto).
func (c *Container) Mode() Mode { return c.mode }

// Open opens a function bound to vfio-pci into the container.
func (c *Container) Open(addr pci.Addr) (*Device, error) {
	return c.open(addr, false)
}

func (c *Container) open(addr pci.Addr, owns bool) (*Device, error) {
	if err := c.host.CheckBound(addr, pcihost.DriverVFIO); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("vfio container: %w", pci.ErrClosed)
	}
	fd, err := c.be.attach(addr)
	if err == nil {
		if rerr := c.be.space().restrict(); rerr != nil {
			c.log.Warn("cannot read the IOMMU's usable IOVA ranges; using the built-in ranges", zap.Error(rerr))
		}
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d, err := newDevice(c, addr, fd, owns)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	if !c.track(d) {
		// Close ran while the device was opening: it must not outlive the container.
		return nil, errors.Join(fmt.Errorf("vfio container: %w", pci.ErrClosed), d.quiesce(), d.release())
	}
	return d, nil
}

// track adds an opened device to the container, unless the container was closed
// meanwhile (then Close has dropped its device set and would never quiesce d).
func (c *Container) track(d *Device) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.devices[d] = struct{}{}
	return true
}

// forget removes a closed device from the container.
func (c *Container) forget(d *Device) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, d)
}

// containerMapper maps DMA memory into the container's address space.
type containerMapper struct{ c *Container }

// Map gives b a bus address in the container.
func (m containerMapper) Map(b []byte) (uint64, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	s := m.c.be.space()
	if s == nil {
		return 0, errors.New("no device in the VFIO container yet: open a device before allocating DMA memory")
	}
	return s.dmaMap(b)
}

// PhysicalAddresses implements pci.PhysicalAddresser: bus addresses are physical in a
// no-IOMMU container, IOVAs otherwise.
func (m containerMapper) PhysicalAddresses() bool { return m.c.NoIOMMU() }

// Unmap withdraws b from the container.
func (m containerMapper) Unmap(b []byte, busAddr uint64) error {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	s := m.c.be.space()
	if s == nil {
		return fmt.Errorf("unmap %#x: container has no address space", busAddr)
	}
	return s.dmaUnmap(b, busAddr)
}

// Close quiesces every device still open in the container (interrupts off, bus
// mastering off), unmaps and frees all DMA memory, then closes the devices and the
// backend. It is safe to call more than once.
func (c *Container) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	devs := make([]*Device, 0, len(c.devices))
	for d := range c.devices {
		devs = append(devs, d)
	}
	c.mu.Unlock()

	var errs []error
	for _, d := range devs {
		errs = append(errs, d.quiesce())
	}
	errs = append(errs, c.dma.Close())
	for _, d := range devs {
		errs = append(errs, d.release())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.devices = nil
	if s := c.be.space(); s != nil {
		errs = append(errs, s.close())
	}
	errs = append(errs, c.be.close())
	return errors.Join(errs...)
}

// groupMembers describes the functions of an IOMMU group and their drivers, for the
// not-viable error.
func groupMembers(host *pcihost.Host, group int) string {
	members, err := host.IOMMUGroupMembers(group)
	if err != nil {
		return "members unknown: " + err.Error()
	}
	var parts []string
	for _, m := range members {
		drv, err := host.Driver(m)
		switch {
		case err != nil:
			drv = err.Error()
		case drv == "":
			drv = "no driver"
		}
		parts = append(parts, m.String()+" ("+drv+")")
	}
	return strings.Join(parts, ", ")
}
