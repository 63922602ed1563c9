// Package uio opens PCI functions bound to uio_pci_generic and returns them as
// pci.Device: BARs mapped from sysfs resourceN files, configuration space through the
// sysfs config file, INTx through /dev/uioN, and DMA memory addressed by physical
// address (from /proc/self/pagemap).
//
// uio gives no DMA isolation: the device can write anywhere in physical memory, and if the
// process dies nothing stops the device from writing to pages the kernel has reused.
// Prefer vfio-pci; use uio only where VFIO is unavailable.
package uio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/internal/mmio"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// Errors callers may match with errors.Is.
var (
	// ErrNotBound means the device is not bound to uio_pci_generic. It is pci.ErrNotBound.
	ErrNotBound = pci.ErrNotBound
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
	DMA *dmamem.Allocator
	// HugePages is the page policy of the device's own allocator.
	HugePages dmamem.HugePages
	// NoReset skips the function reset on open (bus mastering then stays off).
	NoReset bool
	// Log receives warnings. Nil discards them.
	Log *zap.Logger
}

func (o Options) root() string {
	if o.Root == "" {
		return "/"
	}
	return o.Root
}

// NewDMA returns an allocator whose bus addresses are physical addresses, to share
// between uio devices with Options.DMA. The caller closes it after the devices, and then
// closes the returned Pagemap.
func NewDMA(root string, huge dmamem.HugePages, log *zap.Logger) (*dmamem.Allocator, *dmamem.Pagemap, error) {
	pm, err := dmamem.OpenPagemap(root)
	if err != nil {
		return nil, nil, err
	}
	return dmamem.New(pm, dmamem.Options{HugePages: huge, Log: log}), pm, nil
}

// Device is a PCI function opened through uio_pci_generic. It implements pci.Device.
type Device struct {
	addr pci.Addr
	host *pci.Host
	log  *zap.Logger

	mu      sync.Mutex
	uioPath string
	uioFD   int
	cfg     *configFile
	dma     *dmamem.Allocator
	ownDMA  bool
	pagemap *dmamem.Pagemap
	regions [6]*mmio.Region
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
	host, err := pci.NewHost(opts.root())
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	d := &Device{addr: addr, host: host, log: log.With(zap.Stringer("pci", addr)), uioFD: -1}
	if err := host.CheckBound(addr, pci.DriverUIO); err != nil {
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
	d.log.Warn("uio_pci_generic gives no DMA isolation: the device can write to any physical memory, "+
		"and keeps doing so if this process dies without stopping it; prefer vfio-pci", zap.String("uio", d.uioPath))
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
		d.dma, d.pagemap, err = NewDMA(d.host.Root, opts.HugePages, d.log)
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
		case errors.Is(err, ErrNotSupported):
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
	if bar < 0 || bar > 5 {
		return nil, fmt.Errorf("BAR%d: index out of range 0-5", bar)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("device closed")
	}
	if r := d.regions[bar]; r != nil {
		return r, nil
	}
	text, err := d.host.ReadDeviceFile(d.addr, "resource", pci.MaxAttrSize)
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
		return nil, fmt.Errorf("BAR%d: I/O port BAR (flags %#x) cannot be mapped through sysfs: %w", bar, b.flags, ErrNotSupported)
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
	d.regions[bar] = r
	return r, nil
}

// Config returns the function's configuration space (the sysfs config file).
func (d *Device) Config() pci.ConfigSpace { return d.cfg }

// DMA returns the physical-address allocator.
func (d *Device) DMA() pci.DMA { return d.dma }

// IRQs enables (n = 1) or disables (n = 0) INTx, the only kind uio_pci_generic offers.
// The vector reads /dev/uioN; the kernel masks INTx (sets the command register's
// INTx-disable bit) each time it fires, and the vector's Rearm clears the bit again.
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind != irq.INTx {
		return nil, fmt.Errorf("irqs: %v: %w", kind, ErrNotSupported)
	}
	if n < 0 || n > 1 {
		return nil, fmt.Errorf("irqs: cannot enable %d INTx vectors", n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("irqs: device closed")
	}
	if err := d.disableINTx(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	v := irq.NewUIO(d.uioFD, d.cfg.clearINTxDisable)
	if _, err := v.Drain(); err != nil { // sync with the kernel's cumulative count
		return nil, err
	}
	if err := d.cfg.clearINTxDisable(); err != nil {
		return nil, err
	}
	d.vec = v
	return []*irq.Vector{v}, nil
}

// disableINTx masks INTx at the device. Called with d.mu held.
func (d *Device) disableINTx() error {
	if d.vec != nil {
		d.vec.Close()
		d.vec = nil
	}
	if err := pci.UpdateCommand(d.cfg, pci.CmdINTxDisable, 0); err != nil {
		return fmt.Errorf("irqs: disable INTx: %w", err)
	}
	return nil
}

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
	if d.pagemap != nil {
		errs = append(errs, d.pagemap.Close())
		d.pagemap = nil
	}
	for i, r := range d.regions {
		if r != nil {
			errs = append(errs, r.Unmap())
			d.regions[i] = nil
		}
	}
	if d.cfg != nil {
		errs = append(errs, d.cfg.close())
	}
	if d.uioFD >= 0 {
		errs = append(errs, unix.Close(d.uioFD))
		d.uioFD = -1
	}
	return errors.Join(errs...)
}

// configFile is configuration space through the sysfs config file.
type configFile struct {
	f    *os.File
	fd   int
	path string
	cmd  [2]byte // Rearm's buffer: no allocation on the hot path
	mu   sync.Mutex
}

// ReadAt reads configuration space at off.
func (c *configFile) ReadAt(b []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return 0, fmt.Errorf("read %s: %w", c.path, os.ErrClosed)
	}
	n, err := unix.Pread(c.fd, b, off)
	if err != nil {
		return 0, fmt.Errorf("read %s at %#x: %w", c.path, off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("read %s at %#x: short read %d of %d", c.path, off, n, len(b))
	}
	return n, nil
}

// WriteAt writes configuration space at off.
func (c *configFile) WriteAt(b []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return 0, fmt.Errorf("write %s: %w", c.path, os.ErrClosed)
	}
	n, err := unix.Pwrite(c.fd, b, off)
	if err != nil {
		return 0, fmt.Errorf("write %s at %#x: %w", c.path, off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("write %s at %#x: short write %d of %d", c.path, off, n, len(b))
	}
	return n, nil
}

// clearINTxDisable re-enables INTx after uio_pci_generic masked it. It allocates nothing.
func (c *configFile) clearINTxDisable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return errRearm
	}
	if n, err := unix.Pread(c.fd, c.cmd[:], pci.CfgCommand); err != nil || n != 2 {
		return errRearm
	}
	v := binary.LittleEndian.Uint16(c.cmd[:])
	if v&pci.CmdINTxDisable == 0 {
		return nil
	}
	binary.LittleEndian.PutUint16(c.cmd[:], v&^pci.CmdINTxDisable)
	if n, err := unix.Pwrite(c.fd, c.cmd[:], pci.CfgCommand); err != nil || n != 2 {
		return errRearm
	}
	return nil
}

// close closes the config file; later accesses fail instead of reaching a reused fd.
func (c *configFile) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := c.f.Close()
	c.fd = -1
	return err
}

var errRearm = errors.New("rearm INTx: config space access failed")
