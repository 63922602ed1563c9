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
	"path/filepath"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/internal/mmio"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

const uioDriver = "uio_pci_generic"

// Errors callers may match with errors.Is.
var (
	// ErrNotBound means the device is not bound to uio_pci_generic.
	ErrNotBound = errors.New("device not bound to uio_pci_generic")
	// ErrNotSupported (pci.ErrNotSupported) means uio cannot do what was asked (MSI/MSI-X,
	// I/O port BARs).
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
	dir  string // sysfs device directory
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
	root := opts.root()
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	d := &Device{addr: addr, dir: filepath.Join(root, "sys/bus/pci/devices", addr.String()), log: log.With(zap.Stringer("pci", addr)), uioFD: -1}
	if _, err := os.Stat(d.dir); err != nil {
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	if drv := driverOf(d.dir); drv != uioDriver {
		if drv == "" {
			drv = "no driver"
		}
		return nil, fmt.Errorf("device %s is bound to %s: %w (bind it with `uiod bind %s uio_pci_generic`)", addr, drv, ErrNotBound, addr)
	}
	name, err := uioName(d.dir)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	d.uioPath = filepath.Join(root, "dev", name)
	if err := d.open(opts); err != nil {
		d.release()
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	d.log.Warn("uio_pci_generic gives no DMA isolation: the device can write to any physical memory, "+
		"and keeps doing so if this process dies without stopping it; prefer vfio-pci", zap.String("uio", d.uioPath))
	return d, nil
}

func (d *Device) open(opts Options) error {
	fd, err := unix.Open(d.uioPath, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", d.uioPath, err)
	}
	d.uioFD = fd
	cfgPath := filepath.Join(d.dir, "config")
	cfd, err := unix.Open(cfgPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfgPath, err)
	}
	d.cfg = &configFile{fd: cfd, path: cfgPath}
	if opts.DMA != nil {
		d.dma = opts.DMA
	} else {
		d.dma, d.pagemap, err = NewDMA(opts.root(), opts.HugePages, d.log)
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

// driverOf returns the name of the driver bound to a sysfs device, "" if none.
func driverOf(dir string) string {
	l, err := os.Readlink(filepath.Join(dir, "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(l)
}

// uioName finds the uioN device of a function bound to uio_pci_generic.
func uioName(dir string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "uio"))
	if err != nil {
		return "", fmt.Errorf("no uio device: %w", err)
	}
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "uio"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no uioN entry in %s", filepath.Join(dir, "uio"))
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
	text, err := os.ReadFile(filepath.Join(d.dir, "resource"))
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
	path := filepath.Join(d.dir, fmt.Sprintf("resource%d", bar))
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_SYNC|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("BAR%d: open %s: %w", bar, path, err)
	}
	defer unix.Close(fd) // the mapping outlives the descriptor
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
	p := filepath.Join(d.dir, "reset")
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("reset %s: no %s: %w", d.addr, p, ErrNotSupported)
	}
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		return fmt.Errorf("reset %s: %w", d.addr, err)
	}
	return nil
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
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

var errRearm = errors.New("rearm INTx: config space access failed")
