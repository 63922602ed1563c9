package vfio

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/mmio"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// Device is a PCI function opened through VFIO. It implements pci.Device.
type Device struct {
	c    *Container
	addr pci.Addr
	owns bool // closing the device closes the container
	log  *zap.Logger

	mu         sync.Mutex
	fd         int
	info       deviceInfo
	cfg        *configSpace
	regions    pci.Regions
	irqKind    irq.Kind
	vectors    []*irq.Vector
	quiesced   bool
	closed     bool
	intxUnmask [irqSetHeaderSize]byte // prebuilt SET_IRQS for Rearm: no allocation
	intxArmed  atomic.Bool            // the INTx vector is enabled; Rearm may unmask
	relay      *pci.EventRelay        // request and error interrupts (Events), nil until armed
	eventVecs  map[pci.Event]*irq.Vector
}

var _ pci.Device = (*Device)(nil)

// Open opens a function bound to vfio-pci in a container of its own, which Close also
// closes. Use NewContainer and Container.Open for devices that share DMA memory.
func Open(addr pci.Addr, opts Options) (*Device, error) {
	host, err := opts.host()
	if err != nil {
		return nil, err
	}
	if err := host.CheckBound(addr, pcihost.DriverVFIO); err != nil {
		return nil, err
	}
	c, err := NewContainer(opts)
	if err != nil {
		return nil, err
	}
	d, err := c.open(addr, true)
	if err != nil {
		c.Close()
		return nil, err
	}
	return d, nil
}

func newDevice(c *Container, addr pci.Addr, fd int, owns bool) (*Device, error) {
	d := &Device{c: c, addr: addr, owns: owns, fd: fd, log: c.log.With(zap.Stringer("pci", addr))}
	d.info = deviceInfo{Argsz: sizeofDeviceInfo}
	if err := vfioDeviceGetInfo.do(fd, &d.info); err != nil {
		return nil, fmt.Errorf("get device info: %w", err)
	}
	if d.info.Flags&deviceFlagsPCI == 0 {
		return nil, fmt.Errorf("not a PCI device (flags %#x): %w", d.info.Flags, pci.ErrNotSupported)
	}
	if d.info.NumRegions <= vfioPCIConfigRegionIndex {
		return nil, fmt.Errorf("only %d regions, no config space", d.info.NumRegions)
	}
	ri, err := d.regionInfo(vfioPCIConfigRegionIndex)
	if err != nil {
		return nil, err
	}
	d.cfg = &configSpace{fd: fd, offset: int64(ri.Offset), size: int64(ri.Size)}
	encodeIRQSet(d.intxUnmask[:], irqSetDataNone|irqSetActionUnmask, uint32(irq.INTx), 0, 1, nil)

	// Start from a known state: nothing may DMA until the device has been reset.
	if err := pci.SetBusMaster(d.cfg, false); err != nil {
		return nil, err
	}
	if !c.opts.NoReset {
		if err := d.Reset(); err != nil {
			d.log.Warn("function reset failed; continuing with the device as VFIO opened it", zap.Error(err))
		}
	}
	// A freshly reset function has no rings programmed, so it is safe to let it master.
	if err := pci.SetBusMaster(d.cfg, true); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Device) regionInfo(index uint32) (regionInfo, error) {
	ri := regionInfo{Argsz: sizeofRegionInfo, Index: index}
	if err := vfioDeviceGetRegionInfo.do(d.fd, &ri); err != nil {
		return ri, fmt.Errorf("get region %d info: %w", index, err)
	}
	return ri, nil
}

// Addr returns the function's PCI address.
func (d *Device) Addr() pci.Addr { return d.addr }

// Container returns the container the device belongs to.
func (d *Device) Container() *Container { return d.c }

// Region maps BAR bar. Memory BARs the kernel lets us mmap are accessed directly; others
// (I/O port BARs, BARs without the MMAP flag) through pread/pwrite on the device fd.
func (d *Device) Region(bar int) (pci.Region, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regions.Get(bar, d.closed, d.mapBAR)
}

// mapBAR maps BAR bar. Called with d.mu held.
func (d *Device) mapBAR(bar int) (pci.Region, error) {
	ri, err := d.regionInfo(uint32(bar))
	if err != nil {
		return nil, fmt.Errorf("BAR%d: %w", bar, err)
	}
	if ri.Size == 0 {
		return nil, fmt.Errorf("BAR%d: not implemented by %s", bar, d.addr)
	}
	if ri.Size > 1<<40 {
		return nil, fmt.Errorf("BAR%d: implausible size %#x", bar, ri.Size)
	}
	var r pci.Region
	if ri.Flags&regionInfoFlagMmap != 0 {
		m, err := mmio.Map(d.fd, int64(ri.Offset), int(ri.Size))
		if err == nil {
			r = m
		} else {
			d.log.Warn("mmap of BAR failed; using slow pread/pwrite access", zap.Int("bar", bar), zap.Error(err))
		}
	}
	if r == nil {
		if ri.Flags&(regionInfoFlagRead|regionInfoFlagWrite) != regionInfoFlagRead|regionInfoFlagWrite {
			return nil, fmt.Errorf("BAR%d: region is neither mappable nor readable and writable (flags %#x)", bar, ri.Flags)
		}
		r = &fileRegion{fd: d.fd, offset: int64(ri.Offset), size: int64(ri.Size), bar: bar, closed: &d.cfg.closed}
	}
	return r, nil
}

// Config returns the function's configuration space (VFIO's config region; the kernel
// virtualises some fields, such as the MSI/MSI-X capabilities).
func (d *Device) Config() pci.ConfigSpace { return d.cfg }

// DMA returns the container's allocator.
func (d *Device) DMA() pci.DMA { return d.c.dma }

// Reset performs a function-level reset (VFIO_DEVICE_RESET).
func (d *Device) Reset() error {
	if d.info.Flags&deviceFlagsReset == 0 {
		return fmt.Errorf("reset %s: %w: device has no reset method", d.addr, pci.ErrNotSupported)
	}
	if _, err := ioctlValue(d.fd, vfioDeviceReset, 0); err != nil {
		return fmt.Errorf("reset %s: %w", d.addr, err)
	}
	return nil
}

// Close quiesces the device (interrupts off, bus mastering off), then, if the device owns
// its container, unmaps and frees its DMA memory, and closes the device. Safe to call
// more than once.
func (d *Device) Close() error {
	if d.owns {
		return d.c.Close()
	}
	err := errors.Join(d.quiesce(), d.release())
	d.c.forget(d)
	return err
}

// quiesce disables interrupts and bus mastering.
func (d *Device) quiesce() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.quiesced {
		return nil
	}
	d.quiesced = true
	errs := []error{d.disableIRQs(), d.disarmEvents()}
	if err := pci.SetBusMaster(d.cfg, false); err != nil {
		errs = append(errs, fmt.Errorf("bus master off: %w", err))
	}
	return errors.Join(errs...)
}

// release unmaps the BARs and closes the device fd (the kernel then resets the device).
func (d *Device) release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	errs = append(errs, d.regions.Release())
	d.cfg.closed.Store(true)
	errs = append(errs, unix.Close(d.fd))
	return errors.Join(errs...)
}
