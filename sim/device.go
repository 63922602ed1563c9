// Package sim is a device model: a pci.Device whose registers, DMA and interrupts behave
// like hardware, so real driver code runs against it without privileges.
//
// The core here is device-independent: a register file with per-register semantics
// (plain, read-only, write-1-to-set, write-1-to-clear, read-to-clear, hooks, doorbells,
// self-clearing bits), an IOMMU through which every DMA is translated, MSI-X vectors on
// real eventfds, level-triggered INTx, and configuration space with the bus-master and
// INTx-disable bits honoured. The NIC models (sim/intel, sim/igbvf, sim/virtio) build on
// it.
//
// In strict mode every access to an unknown register and every DMA fault is recorded and
// reported by Err, so a test fails when its driver misbehaves.
//
// Every NIC model satisfies one contract, Model: PCI is the function a driver opens (the
// same method on every model, whether the core is wrapped or not), Device is the core
// under it (Err, the IOMMU, removal), and the link, counter and fault hooks the daemon,
// the benches and the shared driver suites use mean the same on each. Each model package
// has New(Config) (*Model, error) and NewPair(Config) (*Pair[*Model], error), the latter
// two functions of one device on one IOMMU, each on an in-memory wire (NewPair here is
// what they share). sim/simnic builds a model by NIC driver name.
package sim

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// Config describes a device to model.
type Config struct {
	Addr     pci.Addr
	VendorID uint16
	DeviceID uint16
	Revision uint8
	Class    uint32 // class code, e.g. 0x020000 (Ethernet)
	// BAR0Size is the size of the register BAR in bytes; Regs are its registers.
	BAR0Size int
	Regs     []Reg
	// MSIXVectors is the size of the MSI-X table (at least 1).
	MSIXVectors int
	// IOMMU is a shared DMA address space, or nil for one of the device's own.
	IOMMU *IOMMU
	// Strict makes unknown register accesses and DMA faults errors (see Device.Err).
	Strict bool
	// Log receives fault reports (nil: none).
	Log *zap.Logger
	// OnReset runs with the lock held after a function-level reset restored the
	// registers' reset values, so the model can reset its own state.
	OnReset func()
	// OnBusMaster runs with the lock held when the bus-master bit changes.
	OnBusMaster func(on bool)
	// OnClose runs once, without the lock, after the device was quiesced.
	OnClose func()
	// BeforeAccess, when set, runs with the lock held before every BAR0 register read
	// (write false) and write, so a model can first complete operations that finish on
	// their own after a time (a reset, a queue enable). For a write it may refuse the
	// access by returning false: the write is then dropped, as a device in reset drops it.
	BeforeAccess func(off uint32, write bool, v uint32) bool
}

// Device is a modelled PCI function. It implements pci.Device.
//
// One mutex (Lock) guards the registers, configuration space and interrupt state; register
// accesses take it, as do the model's wire-driven paths. Descriptor rings and buffers are
// plain shared memory reached through the IOMMU.
type Device struct {
	cfg   Config
	mu    sync.Mutex
	regs  *regFile
	conf  configSpace
	iommu *IOMMU

	closed    bool
	closeOnce sync.Once
	gone      bool         // surprise-removed (Remove): reads all ones, no DMA, no interrupts
	removal   removalState // the device-request notification (Events, RequestRemoval)

	// Interrupts.
	kind       irq.Kind
	vectors    []*irq.Vector
	intxLevel  bool // the model asserts INTx
	intxMasked bool // fired and not yet re-armed
	fired      []uint64

	faults     []Fault
	faultCount uint64
	unknown    uint64
}

var _ pci.Device = (*Device)(nil)

// New returns a device with its registers at their reset values.
func New(cfg Config) (*Device, error) {
	if cfg.MSIXVectors < 1 {
		cfg.MSIXVectors = 1
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	regs, err := newRegFile(cfg.BAR0Size, cfg.Regs)
	if err != nil {
		return nil, fmt.Errorf("sim %s: %w", cfg.Addr, err)
	}
	d := &Device{cfg: cfg, regs: regs, iommu: cfg.IOMMU, kind: -1}
	if d.iommu == nil {
		d.iommu = NewIOMMU()
	}
	d.iommu.attach()
	d.conf.d = d
	d.conf.init(&d.cfg)
	return d, nil
}

// Addr implements pci.Device.
func (d *Device) Addr() pci.Addr { return d.cfg.Addr }

// Config implements pci.Device.
func (d *Device) Config() pci.ConfigSpace { return &d.conf }

// DMA implements pci.Device: the device's IOMMU.
func (d *Device) DMA() pci.DMA { return d.iommu }

// IOMMU is the device's DMA address space.
func (d *Device) IOMMU() *IOMMU { return d.iommu }

// Strict reports whether the device runs in strict mode.
func (d *Device) Strict() bool { return d.cfg.Strict }

// Region implements pci.Device. BAR0 is the register file; other BARs do not exist.
func (d *Device) Region(bar int) (pci.Region, error) {
	if bar != 0 {
		return nil, fmt.Errorf("sim %s: BAR%d: no such region", d.cfg.Addr, bar)
	}
	return bar0{d}, nil
}

// Lock takes the device lock. Register hooks run with it held; a model takes it around
// work that does not start from a register access (a frame arriving from the wire, a
// timer).
func (d *Device) Lock() { d.mu.Lock() }

// Unlock releases the device lock.
func (d *Device) Unlock() { d.mu.Unlock() }

// Get returns the stored value of the register at off without any semantics. The lock
// must be held.
func (d *Device) Get(off uint32) uint32 { return d.regs.vals[off/4] }

// Set stores v in the register at off without any semantics or hooks. The lock must be
// held.
func (d *Device) Set(off, v uint32) { d.regs.vals[off/4] = v }

// Closed reports whether Close was called. The lock must be held.
func (d *Device) Closed() bool { return d.closed }

// BusMaster reports whether the driver enabled bus mastering: without it the device must
// not DMA. The lock must be held.
func (d *Device) BusMaster() bool {
	return d.conf.command()&pci.CmdBusMaster != 0 && !d.closed && !d.gone
}

// ErrNoBusMaster is returned by DMA when bus mastering is off.
var ErrNoBusMaster = errors.New("bus mastering disabled")

// DMAAt returns the n bytes at bus address iova for the device to read or write. Without
// bus mastering it fails with ErrNoBusMaster (the model drops and counts, no fault); an
// unmapped address is a DMA fault, recorded with what (what the device was doing). The
// lock must be held.
func (d *Device) DMAAt(iova uint64, n int, what string) ([]byte, error) {
	if !d.BusMaster() {
		return nil, ErrNoBusMaster
	}
	b, err := d.iommu.Translate(iova, n)
	if err != nil {
		d.Fault(Fault{Kind: DMAFault, Addr: iova, Msg: fmt.Sprintf("%s (%d bytes)", what, n)})
		return nil, err
	}
	return b, nil
}

// Fault records a fault. The lock must be held.
func (d *Device) Fault(f Fault) {
	d.faultCount++
	if len(d.faults) < maxFaults {
		d.faults = append(d.faults, f)
	}
	if d.faultCount <= maxFaults {
		d.cfg.Log.Warn("device fault", zap.Stringer("dev", d.cfg.Addr), zap.Error(f))
	}
}

// Faults returns the faults recorded so far (at most the first 64) and how many there
// were in total.
func (d *Device) Faults() ([]Fault, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Fault(nil), d.faults...), d.faultCount
}

// Err reports the first fault in strict mode, or nil when there was none or the device is
// not strict.
func (d *Device) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.cfg.Strict || d.faultCount == 0 {
		return nil
	}
	return fmt.Errorf("sim %s: %d faults, first: %w", d.cfg.Addr, d.faultCount, d.faults[0])
}

// Reset implements pci.Device: a function-level reset. Registers return to their reset
// values and the model's OnReset runs; configuration space (and with it bus mastering) and
// the interrupt vectors are kept, as VFIO restores them around a reset.
func (d *Device) Reset() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim %s: reset: device closed", d.cfg.Addr)
	}
	d.ResetRegisters()
	return nil
}

// ResetRegisters restores every register's reset value and runs OnReset. The lock must be
// held (models call it for a software reset such as CTRL.RST).
func (d *Device) ResetRegisters() {
	d.regs.reset()
	d.intxLevel = false
	if d.cfg.OnReset != nil {
		d.cfg.OnReset()
	}
	d.evalINTx()
}

// Close implements pci.Device: bus mastering off, interrupts off, then the device's DMA
// memory is released (the shared IOMMU's when this was its last device).
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.conf.setCommand(d.conf.command() &^ pci.CmdBusMaster)
		d.closed = true
		d.closeVectors()
		d.closeRemoval()
		d.mu.Unlock()
		if d.cfg.OnClose != nil {
			d.cfg.OnClose()
		}
		d.iommu.detach()
	})
	return nil
}

// bar0 is the register file as a pci.Region.
type bar0 struct{ d *Device }

func (r bar0) Len() int { return len(r.d.regs.vals) * 4 }

func (r bar0) check(off uint32, size uint32) {
	if off%size != 0 || uint64(off)+uint64(size) > uint64(r.Len()) {
		panic(fmt.Sprintf("sim %s: %d-byte register access at 0x%x outside or unaligned in the %d-byte BAR0", r.d.cfg.Addr, size, off, r.Len()))
	}
}

func (r bar0) Read32(off uint32) uint32 {
	r.check(off, 4)
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.Fault(Fault{Kind: AccessAfterClose, Addr: uint64(off), Msg: "read"})
		return ^uint32(0)
	}
	if d.gone {
		return ^uint32(0) // nothing answers: the bus master aborts, the CPU reads all ones
	}
	if d.cfg.BeforeAccess != nil {
		d.cfg.BeforeAccess(off, false, 0)
	}
	v, ok := d.regs.read(off)
	if !ok {
		d.unknown++
		d.Fault(Fault{Kind: UnknownRead, Addr: uint64(off)})
	}
	return v
}

func (r bar0) Write32(off uint32, v uint32) {
	r.check(off, 4)
	d := r.d
	d.mu.Lock()
	if d.closed {
		d.Fault(Fault{Kind: AccessAfterClose, Addr: uint64(off), Msg: fmt.Sprintf("write 0x%x", v)})
		d.mu.Unlock()
		return
	}
	if d.gone || (d.cfg.BeforeAccess != nil && !d.cfg.BeforeAccess(off, true, v)) {
		d.mu.Unlock()
		return
	}
	reg, i := d.regs.write(off, v)
	if reg == nil {
		d.unknown++
		d.Fault(Fault{Kind: UnknownWrite, Addr: uint64(off), Msg: fmt.Sprintf("value 0x%x", v)})
	}
	d.mu.Unlock()
	if reg != nil && reg.Doorbell != nil {
		reg.Doorbell(i, v)
	}
}

func (r bar0) Read64(off uint32) uint64 {
	r.check(off, 8)
	lo := r.Read32(off)
	hi := r.Read32(off + 4)
	return uint64(hi)<<32 | uint64(lo)
}

func (r bar0) Write64(off uint32, v uint64) {
	r.check(off, 8)
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}
