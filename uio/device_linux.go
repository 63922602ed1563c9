package uio

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/mmio"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// Device is a PCI function opened through uio_pci_generic. It implements pci.Device.
type Device struct {
	addr pci.Addr
	host *pcihost.Host
	log  *zap.Logger

	mu      sync.Mutex
	uioPath string
	uioFD   int
	cfg     *configFile
	dma     *DMA
	ownDMA  bool
	regions pci.Regions
	vec     *irq.Vector
	closed  bool
}

var _ pci.Device = (*Device)(nil)

// Open opens a function bound to uio_pci_generic: it resets the function (when sysfs
// offers a reset), enables memory decoding and, if the reset succeeded, bus mastering
// (uio_pci_generic does not), and leaves INTx disabled until IRQs enables it. Without a
// reset (none offered, failed, or Options.NoReset) bus mastering stays off: the driver
// turns it on once it has reset the device itself.
func Open(addr pci.Addr, opts Options) (*Device, error) {
	host, err := pcihost.New(cmp.Or(opts.Root, "/"))
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	d := &Device{addr: addr, host: host, log: log.With(zap.Stringer("pci", addr)), uioFD: -1}
	if err := host.CheckBound(addr, pcihost.DriverUIO); err != nil {
		return nil, err
	}
	d.uioPath, err = host.UIODevice(addr)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	if err := d.open(opts); err != nil {
		d.release()
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	d.log.Warn(pcihost.WarnUIO, zap.String("uio", d.uioPath))
	return d, nil
}

func (d *Device) open(opts Options) error {
	fd, err := unix.Open(d.uioPath, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", d.uioPath, err)
	}
	d.uioFD = fd
	cf, err := d.host.OpenDeviceFile(d.addr, "config", os.O_RDWR)
	if err != nil {
		return err
	}
	d.cfg = &configFile{f: cf, fd: int(cf.Fd()), path: cf.Name()}
	if opts.DMA != nil {
		d.dma = opts.DMA
	} else {
		d.dma, err = NewDMA(d.host.Root(), opts.HugePages, d.log)
		if err != nil {
			return err
		}
		d.ownDMA = true
	}
	// Start from a known state: no DMA, no interrupts, then reset.
	if err := pci.UpdateCommand(d.cfg, pci.CmdINTxDisable, pci.CmdBusMaster); err != nil {
		return err
	}
	reset := false
	if !opts.NoReset {
		err := d.Reset()
		switch {
		case err == nil:
			reset = true
		case errors.Is(err, pci.ErrNotSupported):
			d.log.Warn("function has no reset; bus mastering stays off until the driver has reset the device", zap.Error(err))
		default:
			d.log.Warn("function reset failed; bus mastering stays off until the driver has reset the device", zap.Error(err))
		}
	}
	if !reset {
		// Rings a previous user left programmed may still be live: with no IOMMU, letting
		// the device master now would let it DMA into pages the kernel has handed on.
		return pci.UpdateCommand(d.cfg, pci.CmdMemory|pci.CmdINTxDisable, pci.CmdBusMaster)
	}
	// A freshly reset function has no rings programmed: safe to let it master.
	return pci.UpdateCommand(d.cfg, pci.CmdMemory|pci.CmdBusMaster|pci.CmdINTxDisable, 0)
}

// Addr returns the function's PCI address.
func (d *Device) Addr() pci.Addr { return d.addr }

// UIOPath returns the path of the function's /dev/uioN node.
func (d *Device) UIOPath() string { return d.uioPath }

// Region maps memory BAR bar from the sysfs resourceN file. I/O port BARs cannot be
// mapped this way.
func (d *Device) Region(bar int) (pci.Region, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regions.Get(bar, d.closed, d.mapBAR)
}

// mapBAR maps BAR bar. Called with d.mu held.
func (d *Device) mapBAR(bar int) (pci.Region, error) {
	text, err := d.host.ReadDeviceFile(d.addr, "resource", pcihost.MaxAttrSize)
	if err != nil {
		return nil, fmt.Errorf("BAR%d: %w", bar, err)
	}
	bars, err := parseResource(string(text))
	if err != nil {
		return nil, fmt.Errorf("BAR%d: %w", bar, err)
	}
	if bar >= len(bars) || bars[bar].size() == 0 {
		return nil, fmt.Errorf("BAR%d: not implemented by %s", bar, d.addr)
	}
	b := bars[bar]
	if b.flags&ioresourceMem == 0 {
		return nil, fmt.Errorf("BAR%d: I/O port BAR (flags %#x) cannot be mapped through sysfs: %w", bar, b.flags, pci.ErrNotSupported)
	}
	rf, err := d.host.OpenDeviceFile(d.addr, fmt.Sprintf("resource%d", bar), os.O_RDWR|unix.O_SYNC)
	if err != nil {
		return nil, fmt.Errorf("BAR%d: %w", bar, err)
	}
	defer rf.Close() // the mapping outlives the descriptor
	fd, path := int(rf.Fd()), rf.Name()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("BAR%d: stat %s: %w", bar, path, err)
	}
	size := b.size()
	if st.Size > 0 && uint64(st.Size) < size {
		size = uint64(st.Size)
	}
	r, err := mmio.Map(fd, 0, int(size))
	if err != nil {
		return nil, fmt.Errorf("BAR%d: %w", bar, err)
	}
	return r, nil
}

// Config returns the function's configuration space (the sysfs config file).
func (d *Device) Config() pci.ConfigSpace { return d.cfg }

// DMA returns the physical-address allocator.
func (d *Device) DMA() pci.DMA { return d.dma }

// Reset resets the function through its sysfs reset file.
func (d *Device) Reset() error {
	return d.host.ResetFunction(d.addr)
}

// Close masks INTx and turns bus mastering off, then frees the device's own DMA memory,
// unmaps the BARs and closes its descriptors. Safe to call more than once.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	var errs []error
	if d.cfg != nil {
		errs = append(errs, d.disableINTx())
		if err := pci.SetBusMaster(d.cfg, false); err != nil {
			errs = append(errs, fmt.Errorf("bus master off: %w", err))
		}
	}
	d.mu.Unlock()
	errs = append(errs, d.release())
	return errors.Join(errs...)
}

// release frees what open acquired, in order: DMA memory, BAR mappings, descriptors.
func (d *Device) release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	if d.ownDMA && d.dma != nil {
		errs = append(errs, d.dma.Close())
		d.dma = nil
	}
	errs = append(errs, d.regions.Release())
	if d.cfg != nil {
		errs = append(errs, d.cfg.close())
	}
	if d.uioFD >= 0 {
		errs = append(errs, unix.Close(d.uioFD))
		d.uioFD = -1
	}
	return errors.Join(errs...)
}
