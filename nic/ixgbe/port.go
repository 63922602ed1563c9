// Package ixgbe is the driver for Intel's 10 GbE controllers 82599, X540 and X550: reset
// and init in the datasheet's order, link bring-up, RX/TX queues on the shared
// advanced-descriptor ring code of package nic, RSS, MSI-X and legacy INTx interrupts,
// and statistics. Importing it registers the driver "ixgbe" with nic.Register.
package ixgbe

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

func init() {
	nic.Register(nic.Driver{
		Name:  "ixgbe",
		Match: Match,
		Open: func(dev pci.Device, cfg nic.Config) (nic.Port, error) {
			return Open(dev, cfg)
		},
	})
}

// Port is an open 82599/X540/X550 port. It implements nic.Port.
type Port struct {
	dev    pci.Device
	bar    pci.Region
	fam    family
	cfg    nic.Config
	mac    net.HardwareAddr
	rx     []*nic.RxQueue
	tx     []*nic.TxQueue
	pools  []*nic.Mempool
	vecs   []*irq.Vector // all vectors the port enabled
	rxVec  []*irq.Vector // per RX queue
	kind   irq.Kind      // interrupt mode in use (meaningless when vecs is empty)
	lsc    *nic.VectorWatcher
	linkCh atomic.Uint64 // link status changes seen

	statsMu sync.Mutex
	hw      hwCounters

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // registers are gone: Stats and Link answer from memory
}

var _ nic.Port = (*Port)(nil)

// Open resets and initialises dev, an 82599/X540/X550 function, and starts its queues.
//
// The device is reset first with bus mastering off, so nothing a previous user left
// running can write to memory. With cfg.Interrupts == irq.MSIX the port uses one vector per
// RX queue plus one for link changes; if the backend has no MSI-X (uio_pci_generic) it
// falls back to legacy INTx (see IRQKind). Open waits up to cfg.LinkTimeout for the link
// and returns a port with link down after that.
//
// On success the port owns dev and closes it in Close. On failure Open leaves the device
// quiesced (queues disabled, interrupts masked, bus mastering off) and the caller closes
// it.
func Open(dev pci.Device, cfg nic.Config) (*Port, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(maxQueues); err != nil {
		return nil, fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	device, err := pci.ReadConfig16(dev.Config(), pci.CfgDeviceID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	fam, ok := deviceIDs[device]
	if !ok {
		return nil, fmt.Errorf("%s: device id %04x: %w", dev.Addr(), device, nic.ErrNoDriver)
	}
	bar, err := dev.Region(0)
	if err != nil {
		return nil, fmt.Errorf("%s: map BAR0: %w", dev.Addr(), err)
	}
	p := &Port{dev: dev, bar: bar, fam: fam, cfg: cfg}
	if err := p.open(); err != nil {
		p.abort()
		return nil, fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	return p, nil
}

// open runs the whole bring-up; abort undoes it on failure.
func (p *Port) open() error {
	if err := pci.SetBusMaster(p.dev.Config(), false); err != nil {
		return err
	}
	if err := p.resetHW(); err != nil {
		return err
	}
	p.setupLink()
	p.readCounters() // the registers are read-to-clear: start from zero
	if err := p.readMAC(); err != nil {
		return err
	}
	if err := p.allocQueues(); err != nil {
		return err
	}
	if err := pci.SetBusMaster(p.dev.Config(), true); err != nil {
		return err
	}
	if err := p.initRx(); err != nil {
		return err
	}
	if err := p.initTx(); err != nil {
		return err
	}
	if err := p.setupInterrupts(); err != nil {
		return err
	}
	p.bar.Write32(regRXCTRL, p.bar.Read32(regRXCTRL)|rxctrlRXEN)
	p.waitLink(p.cfg.LinkTimeout)
	return nil
}

// allocQueues allocates the mempools and rings.
func (p *Port) allocQueues() error {
	dma := p.dev.DMA()
	for q := 0; q < p.cfg.RxQueues; q++ {
		pool, err := nic.NewMempool(dma, p.cfg.PoolSize, p.cfg.BufSize)
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", q, err)
		}
		p.pools = append(p.pools, pool)
		rq, err := nic.NewRxQueue(nic.RxConfig{DMA: dma, Pool: pool, Size: p.cfg.RxRing, Tail: nic.Doorbell{Reg: p.bar, Off: regRDT(q)}})
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", q, err)
		}
		p.rx = append(p.rx, rq)
	}
	for q := 0; q < p.cfg.TxQueues; q++ {
		tq, err := nic.NewTxQueue(nic.TxConfig{DMA: dma, Size: p.cfg.TxRing, Tail: nic.Doorbell{Reg: p.bar, Off: regTDT(q)}, BufSize: p.cfg.BufSize})
		if err != nil {
			return fmt.Errorf("tx queue %d: %w", q, err)
		}
		p.tx = append(p.tx, tq)
	}
	return nil
}

// abort quiesces the device after a failed open and frees what open allocated.
func (p *Port) abort() {
	p.quiesce()
	pci.SetBusMaster(p.dev.Config(), false)
	if len(p.vecs) > 0 {
		p.dev.IRQs(p.kind, 0)
	}
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

// quiesce masks every interrupt, stops the link watcher, disables the queues and takes the
// buffers back from the rings.
func (p *Port) quiesce() {
	p.bar.Write32(regEIMC, eimcAll)
	if p.lsc != nil {
		p.lsc.Stop()
		p.lsc = nil
	}
	p.bar.Write32(regRXCTRL, p.bar.Read32(regRXCTRL)&^rxctrlRXEN)
	for i, q := range p.rx {
		p.bar.Write32(regRXDCTL(i), p.bar.Read32(regRXDCTL(i))&^dxctlEnable)
		waitClear(p.bar, regRXDCTL(i), dxctlEnable, 10*time.Millisecond)
		q.Release()
	}
	for i, q := range p.tx {
		p.bar.Write32(regTXDCTL(i), p.bar.Read32(regTXDCTL(i))&^dxctlEnable)
		waitClear(p.bar, regTXDCTL(i), dxctlEnable, 10*time.Millisecond)
		q.Reclaim()
		q.Release()
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
func (p *Port) MAC() net.HardwareAddr { return p.mac }

// NumRxQueues implements nic.Port.
func (p *Port) NumRxQueues() int { return len(p.rx) }

// NumTxQueues implements nic.Port.
func (p *Port) NumTxQueues() int { return len(p.tx) }

// RxBurst implements nic.Port.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int { return p.rx[q].Burst(bufs) }

// TxBurst implements nic.Port. Buffers from a pool in another DMA address space are
// copied (see nic.TxQueue).
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int { return p.tx[q].Burst(bufs) }

// RxQueue is the ring of RX queue q, for its counters and pool.
func (p *Port) RxQueue(q int) *nic.RxQueue { return p.rx[q] }

// TxQueue is the ring of TX queue q, for its counters and copy pool.
func (p *Port) TxQueue(q int) *nic.TxQueue { return p.tx[q] }

// Device is the PCI function the port drives.
func (p *Port) Device() pci.Device { return p.dev }
