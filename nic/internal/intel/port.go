// Package intel is the part of the ixgbe and igb drivers that does not depend on the
// controller, as a library of bring-up steps the drivers call in their datasheet's order
// (Attach, AllocQueues, EnableBusMaster, EnableVectors, WaitLink, ...; Abort undoes a
// failed open), and the port's running state: its queues, mempools and interrupt vectors,
// the Port methods of nic.Port, statistics accumulation and RSS programming. A driver
// holds a Port in an unexported field and forwards the nic.Port methods to it (so that go
// doc lists them), describes its registers with a Layout and gives, as Ops, the few
// controller-specific steps the Port's own methods need (Close, Link, the INTx interrupt
// paths); the bring-up is the driver's, not called back from here.
//
// Driver-facing operations are functions taking a *Port rather than methods, so that a
// Port's methods are exactly what a driver forwards.
package intel

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
	"github.com/uiod/uiod/nic/internal/vectors"
	"github.com/uiod/uiod/pci"
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = 0x8086

// Layout is where a controller keeps the registers the shared code touches. Registers at
// the same offset on the 82599 and the 82576 (statistics, receive address 0, RSS) are
// constants of this package.
type Layout struct {
	// RxQueue and TxQueue are the offsets of queue 0's RX and TX register blocks (RDBAL,
	// TDBAL); queue q's block is 0x40·q further.
	RxQueue, TxQueue uint32
	// EIMS and EIMC set and clear extended interrupt mask bits; bit q is RX queue q's
	// cause in MSI-X mode.
	EIMS, EIMC uint32
	// IVAR is where RX (tx false) or TX queue q's interrupt allocation entry sits: the
	// register and the entry's bit shift in it (SetIVAR, MapRxQueues).
	IVAR func(q int, tx bool) (off uint32, shift uint)
	// EITR is interrupt vector v's throttle register, and ITR the format of its interval
	// (Moderate).
	EITR func(v int) uint32
	ITR  Moderation
	// MPC lists the missed packet counters (frames dropped for a full packet buffer).
	MPC []uint32
	// QueueDrops is RX queue q's drop counter: frames dropped for lack of a descriptor
	// with SRRCTL.DROP_EN set (QPRDC on the 82599, RQDPC on the 82576), read-to-clear.
	QueueDrops func(q int) uint32
	// Counters, if set, takes the place of the statistics registers (GPRC, GPTC, GORC,
	// GOTC and MPC; QueueDrops is still read if set): it returns what the device counted
	// since its last call. A virtual function's counters wrap instead of clearing on read.
	Counters func() (rxPackets, rxBytes, txPackets, txBytes uint64)
	// Multicast writes the controller's multicast control on r for SetMulticast: the
	// table on with filter type 0, and the multicast promiscuous bit as mpe says.
	Multicast func(r pci.Region, mpe bool)
}

// Ops are the controller-specific steps the Port's own methods call: Close (Mask, Stop,
// Release), Link and DeviceTime (Link), and the INTx interrupt paths (UnmaskINTx,
// MaskINTx). None is on the per-packet path, and none is a step of the bring-up, which the
// driver runs itself.
type Ops struct {
	// Mask masks every interrupt cause.
	Mask func()
	// Stop clears the global receive (and transmit) enables before the queues are
	// disabled.
	Stop func()
	// Link reads the link state from the registers.
	Link func() nic.Link
	// UnmaskINTx acknowledges the shared INTx cause register (counting a link change it
	// finds there with LinkChanged) and unmasks RX queue q's cause.
	UnmaskINTx func(q int)
	// MaskINTx masks RX queue q's INTx cause.
	MaskINTx func(q int)
	// Release, if set, hands the device back (CTRL_EXT.DRV_LOAD off) once the queues
	// are stopped.
	Release func()
}

// Port is the controller-independent state of an ixgbe or igb port. It implements every
// nic.Port method; the driver reads the link (Ops.Link) and calls ReadMAC.
type Port struct {
	dev    pci.Device
	bar    pci.Region
	cfg    nic.Config
	layout Layout
	ops    Ops
	mac    atomic.Pointer[net.HardwareAddr] // the station address: ReadMAC's, then SetMAC's
	rx     []*ring.RxQueue
	tx     []*ring.TxQueue
	pools  []*nic.Mempool
	irqs   vectors.Set
	lsc    *vectors.Watcher
	linkCh atomic.Uint64 // link status changes seen

	statsMu sync.Mutex
	hw      counters

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // registers are gone: Stats and Link answer from memory
}

// Lookup finds dev's PCI device id in ids, the table of the devices driver supports. An
// id not in it is refused with an error listing the supported ones.
func Lookup[F any](dev pci.Device, driver string, ids map[uint16]F) (F, error) {
	var fam F
	vendor, device, err := pci.ReadIDs(dev.Config())
	if err != nil {
		return fam, fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	fam, ok := ids[device]
	if !ok || vendor != VendorIntel {
		id := nic.DeviceID{Vendor: vendor, Device: device}
		return fam, fmt.Errorf("%s: unsupported device %s, supported are %s: %w", dev.Addr(), id, nic.Supported(driver), nic.ErrNoDriver)
	}
	return fam, nil
}

// DeviceIDs lists a driver's table of Intel device ids, sorted, named by name.
func DeviceIDs[F any](ids map[uint16]F, name func(F) string) []nic.DeviceID {
	out := make([]nic.DeviceID, 0, len(ids))
	for id, f := range ids {
		out = append(out, nic.DeviceID{Vendor: VendorIntel, Device: id, Name: name(f)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// Attach is a driver's first bring-up step: it fills in cfg's defaults, checks it against
// the driver's limits, maps BAR0 and turns bus mastering off (nothing a previous user left
// running may write to memory). p keeps the device, the BAR and the completed
// configuration (BAR, Config) and the controller's layout and ops. Errors name the
// device. Once Attach has succeeded, a driver whose later step fails calls Abort.
func Attach(p *Port, dev pci.Device, cfg nic.Config, limits nic.Limits, layout Layout, ops Ops) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(limits); err != nil {
		return fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	bar, err := dev.Region(0)
	if err != nil {
		return fmt.Errorf("%s: map BAR0: %w", dev.Addr(), err)
	}
	p.dev, p.bar, p.cfg, p.layout, p.ops = dev, bar, cfg, layout, ops
	if err := pci.SetBusMaster(dev.Config(), false); err != nil {
		return Abort(p, err)
	}
	return nil
}

// Abort undoes a bring-up that failed with err after Attach: it leaves the device
// quiesced (interrupts masked, queues disabled, bus mastering off), frees what the
// bring-up allocated and returns err naming the device. The caller still owns the device
// and closes it.
func Abort(p *Port, err error) error {
	abort(p)
	return fmt.Errorf("%s: %w", p.dev.Addr(), err)
}

// BAR is the port's BAR0, mapped by Attach.
func BAR(p *Port) pci.Region { return p.bar }

// Config is the port's configuration as Attach completed it (defaults filled in).
func Config(p *Port) nic.Config { return p.cfg }

// EnableBusMaster turns bus mastering on: the step after the queues are allocated and
// before their rings are programmed.
func EnableBusMaster(p *Port) error { return pci.SetBusMaster(p.dev.Config(), true) }

// WaitLink is the last bring-up step: it waits up to the configured LinkTimeout for the
// link (Ops.Link) to come up. A link still down then is not an error: the port opens with
// the link down, and Link reports it once it comes up (docs/design.md §9).
func WaitLink(p *Port) {
	deadline := time.Now().Add(p.cfg.LinkTimeout)
	sleep := time.Microsecond
	for !p.ops.Link().Up && time.Now().Before(deadline) {
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}

// abort quiesces the device after a failed open and frees what the open allocated.
func abort(p *Port) {
	p.quiesce()
	pci.SetBusMaster(p.dev.Config(), false)
	p.irqs.Disable(p.dev)
	for _, q := range p.rx {
		q.Free()
	}
	for _, q := range p.tx {
		q.Free()
	}
	for _, pool := range p.pools {
		pool.Close()
	}
}

// quiesce masks every interrupt, stops the link watcher, disables receive, transmit and
// the queues and takes the buffers back from the rings.
func (p *Port) quiesce() {
	p.ops.Mask()
	if p.lsc != nil {
		p.lsc.Stop()
		p.lsc = nil
	}
	p.ops.Stop()
	r := p.bar
	for i, q := range p.rx {
		off := p.layout.RxQueue + intelnic.QStride*uint32(i) + intelnic.QDCTL
		r.Write32(off, r.Read32(off)&^intelnic.DctlEnable)
		WaitClear(r, off, intelnic.DctlEnable, queueStopTimeout)
		q.Release()
	}
	for i, q := range p.tx {
		off := p.layout.TxQueue + intelnic.QStride*uint32(i) + intelnic.QDCTL
		r.Write32(off, r.Read32(off)&^intelnic.DctlEnable)
		WaitClear(r, off, intelnic.DctlEnable, queueStopTimeout)
		q.Reclaim()
		q.Release()
	}
	if p.ops.Release != nil {
		p.ops.Release()
	}
}

// Close implements nic.Port: it masks interrupts, disables the queues, returns the rings'
// buffers to their pools and closes the device (bus mastering off, then DMA memory freed).
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.statsMu.Lock()
		p.quiesce()
		p.readCounters()
		p.closed.Store(true)
		p.statsMu.Unlock()
		p.closeErr = p.dev.Close()
	})
	return p.closeErr
}

// MAC implements nic.Port.
func (p *Port) MAC() net.HardwareAddr {
	if m := p.mac.Load(); m != nil {
		return *m
	}
	return nil
}

// NumRxQueues implements nic.Port.
func (p *Port) NumRxQueues() int { return len(p.rx) }

// NumTxQueues implements nic.Port.
func (p *Port) NumTxQueues() int { return len(p.tx) }

// RxBurst implements nic.Port.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int { return p.rx[q].Burst(bufs) }

// TxBurst implements nic.Port. Buffers from a pool in another DMA address space are
// copied (see ring.TxQueue). A queue the ring finds hung is reset first (resetTx) and
// then takes the burst.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int {
	t := p.tx[q]
	n := t.Burst(bufs)
	if n == 0 && t.Hung() && p.resetTx(q) {
		n = t.Burst(bufs)
	}
	return n
}

// RxQueue is the ring of RX queue q, for its counters and pool.
func (p *Port) RxQueue(q int) *ring.RxQueue { return p.rx[q] }

// TxQueue is the ring of TX queue q, for its counters and copy pool.
func (p *Port) TxQueue(q int) *ring.TxQueue { return p.tx[q] }

// Device is the PCI function the port drives.
func (p *Port) Device() pci.Device { return p.dev }

// Pools are p's buffer pools: each RX queue's mempool, then the copy pool of each TX
// queue that has one.
func Pools(p *Port) []*nic.Mempool {
	var pools []*nic.Mempool
	for _, q := range p.rx {
		pools = append(pools, q.Pool())
	}
	for _, q := range p.tx {
		if c := q.CopyPool(); c != nil {
			pools = append(pools, c)
		}
	}
	return pools
}

// Register registers an Intel driver with nic.Register under name.
func Register[P nic.Port](name string, match func(vendor, device uint16) bool, devices []nic.DeviceID, facts nic.Facts, open func(dev pci.Device, cfg nic.Config) (P, error)) {
	nic.Register(nic.Driver{
		Name:    name,
		Match:   match,
		Devices: devices,
		Facts:   facts,
		Open: func(dev pci.Device, cfg nic.Config) (nic.Port, error) {
			p, err := open(dev, cfg)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return p, nil
		},
	})
}
