package tap

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// stopTimeout bounds Close's wait for each goroutine.
const stopTimeout = 5 * time.Second

// Port is a TAP interface as a nic.Port: RX queue 0 is what the kernel transmits on the
// interface, TX queue q hands frames to the kernel as received on it. The threading and
// buffer rules are nic.Port's: RX queue 0 and each TX queue belong to one polling thread
// at a time, and the buffers RxBurst returns come from a mempool of that RX queue's
// thread.
type Port struct {
	name     string
	mac      atomic.Pointer[net.HardwareAddr]
	maxFrame int // the longest frame at the configured MTU: buffers and slots hold it
	mtuMax   int // the configured MTU, the most SetMTU takes
	// frameLimit is the longest frame TxBurst hands the kernel: maxFrame at the MTU the
	// interface has now (SetMTU). down is set while the interface is down (SetDown):
	// TxBurst then drops every frame, counted in txDown.
	frameLimit atomic.Int64
	mtu        atomic.Int64
	down       atomic.Bool
	carrier    atomic.Bool
	f          *os.File
	release    func() error // after f is closed: the interface given back or gone
	log        *zap.Logger

	pool *nic.Mempool
	rx   *rxRing
	tx   []*txRing
	vec  *irq.Vector
	// armed is the RX interrupt's enable bit: the reader signals vec when it fills a
	// buffer while armed is set, and clears it (one signal per arming).
	armed atomic.Bool

	sleeping atomic.Bool   // the writer is about to wait on wake
	wake     chan struct{} // one token: the writer has frames to write
	stop     chan struct{}

	readerDone, writerDone chan struct{}
	closed                 atomic.Bool
	gone                   atomic.Bool // the interface was deleted under the port
	closeOnce              sync.Once
	closeErr               error

	rxPackets, rxBytes, rxErrors, rxNoBuffer          atomic.Uint64
	txPackets, txBytes, txRingFull, txBadLen, txWrite atomic.Uint64
	txDown                                            atomic.Uint64
}

var _ nic.Port = (*Port)(nil)

// newPort builds the port on f, an open descriptor that reads and writes one frame per
// call, and starts its reader and writer. release runs in Close once f is closed. cfg has
// its defaults and is valid.
func newPort(cfg Config, f *os.File, mac net.HardwareAddr, release func() error) (*Port, error) {
	bufSize := nic.BufStride(cfg.maxFrame() + 1) // a read longer than maxFrame is seen
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 2*cfg.RxRing, bufSize)
	if err != nil {
		return nil, fmt.Errorf("tap %s: %w", cfg.Name, err)
	}
	vec, err := irq.NewEventfd(irq.MSIX, 0)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("tap %s: rx vector: %w", cfg.Name, err)
	}
	p := &Port{
		name: cfg.Name, maxFrame: cfg.maxFrame(), mtuMax: cfg.MTU, f: f, release: release, log: cmp.Or(cfg.Log, zap.NewNop()),
		pool: pool, rx: newRxRing(pool, cfg.RxRing), vec: vec,
		wake: make(chan struct{}, 1), stop: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{}),
	}
	mac = append(net.HardwareAddr(nil), mac...)
	p.mac.Store(&mac)
	p.frameLimit.Store(int64(cfg.maxFrame()))
	p.mtu.Store(int64(cfg.MTU))
	p.carrier.Store(true) // the kernel's default for an attached descriptor
	for range cfg.TxQueues {
		p.tx = append(p.tx, newTxRing(cfg.TxRing, cfg.maxFrame()))
	}
	go p.readLoop(make([]byte, bufSize))
	go p.writeLoop()
	return p, nil
}

// Name is the interface's name.
func (p *Port) Name() string { return p.name }

// MAC is the interface's address: the one Open gave it, or the last SetMAC recorded.
func (p *Port) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), (*p.mac.Load())...) }

// NumRxQueues is 1.
func (p *Port) NumRxQueues() int { return 1 }

// NumTxQueues is Config.TxQueues.
func (p *Port) NumTxQueues() int { return len(p.tx) }

// RxBurst takes up to len(bufs) frames the kernel transmitted on the interface. q must be
// 0. It makes no system call and allocates nothing.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int {
	if q != 0 {
		return 0
	}
	return p.rx.burst(bufs)
}

// TxBurst copies bufs into TX queue q's ring towards the kernel and frees them; it returns
// how many it took, fewer than len(bufs) when the ring is full (the caller keeps the
// rest; they are counted in Counters().TxRingFull and Stats().TxErrors). A frame shorter
// than an Ethernet header or longer than the interface's MTU allows (MTU) is taken,
// counted and freed; while the interface is down (SetDown) every frame is. It never
// blocks and allocates nothing.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int {
	if p.down.Load() {
		for _, b := range bufs {
			b.Free()
		}
		p.txDown.Add(uint64(len(bufs)))
		return len(bufs)
	}
	r := p.tx[q]
	limit := int(p.frameLimit.Load())
	n := 0
	var bad uint64
	for ; n < len(bufs); n++ {
		b := bufs[n]
		if l := b.Len(); l < 14 || l > limit {
			bad++
			b.Free()
			continue
		}
		if !r.push(b.Bytes()) {
			break
		}
		b.Free()
	}
	if full := len(bufs) - n; full > 0 {
		p.txRingFull.Add(uint64(full))
	}
	if bad > 0 {
		p.txBadLen.Add(bad)
	}
	if r.publish() && p.sleeping.Load() && p.sleeping.CompareAndSwap(true, false) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return n
}

// RxVector is the eventfd the reader signals for RX queue 0 (nil for other queues).
func (p *Port) RxVector(q int) *irq.Vector {
	if q != 0 {
		return nil
	}
	return p.vec
}

// EnableRxInterrupt arms RX queue 0's vector: the reader signals it when it fills the
// next buffer. Frames already waiting signal it at once, so that none queued before the
// arm goes unnoticed even by a caller that does not poll once more after arming.
func (p *Port) EnableRxInterrupt(q int) {
	if q != 0 {
		return
	}
	p.armed.Store(true)
	// The reader publishes a frame, then loads armed; this stores armed, then loads the
	// ring: one of the two sees the other.
	if p.rx.pending() {
		p.fire()
	}
}

// DisableRxInterrupt disarms RX queue 0's vector.
func (p *Port) DisableRxInterrupt(q int) {
	if q == 0 {
		p.armed.Store(false)
	}
}

// fire signals the vector if it is armed, disarming it.
func (p *Port) fire() {
	if p.armed.Load() && p.armed.CompareAndSwap(true, false) {
		p.vec.Signal() // fails only once the port is closed
	}
}

// Link is up while the port is open and its interface exists (the kernel keeps a TAP's
// carrier on while its descriptor is attached).
func (p *Port) Link() nic.Link { return nic.Link{Up: !p.closed.Load() && !p.gone.Load()} }

// The kernel side of the interface may change under the port (ip link set): the daemon
// follows it with SetMTU, SetMAC and SetDown, which record what it saw and change how the
// port treats frames, never the interface itself, and with SetCarrier, which changes the
// interface's carrier (docs/design.md, "The TAP follows its port"). They may be called
// from any goroutine while the queues run.

// SetCarrier turns the interface's carrier on or off (TUNSETCARRIER): off, the kernel
// sees its link down (operstate down, NO-CARRIER) and transmits nothing on it.
func (p *Port) SetCarrier(on bool) error {
	if err := tuntapSetCarrier(p.f, on); err != nil {
		return fmt.Errorf("tap %s: carrier: %w", p.name, err)
	}
	p.carrier.Store(on)
	return nil
}

// Carrier reports the carrier the port last set (on after Open).
func (p *Port) Carrier() bool { return p.carrier.Load() }

// SetMTU records the MTU the interface has now: TxBurst then hands the kernel frames of
// at most mtu plus the Ethernet header and a VLAN tag (longer ones are counted in
// TxBadLength). It refuses an MTU below 68 or above the one the port was opened with
// (its buffers hold no more), naming both.
func (p *Port) SetMTU(mtu int) error {
	if mtu < 68 || mtu > p.mtuMax {
		return fmt.Errorf("tap %s: mtu %d: want 68..%d (the port's mtu)", p.name, mtu, p.mtuMax)
	}
	p.mtu.Store(int64(mtu))
	p.frameLimit.Store(int64(mtu + frameOverhead))
	return nil
}

// MTU is the interface's MTU as last recorded (Config.MTU after Open).
func (p *Port) MTU() int { return int(p.mtu.Load()) }

// MaxMTU is the MTU the port was opened with, the most SetMTU takes.
func (p *Port) MaxMTU() int { return p.mtuMax }

// SetMAC records the address the interface has now (MAC returns it).
func (p *Port) SetMAC(mac net.HardwareAddr) {
	m := append(net.HardwareAddr(nil), mac...)
	p.mac.Store(&m)
}

// SetDown records whether the interface is administratively down (ip link set down):
// while it is, TxBurst takes every frame, frees it and counts it (Counters().TxDown)
// rather than queueing it for an interface that takes nothing.
func (p *Port) SetDown(down bool) { p.down.Store(down) }

// Down reports what SetDown last recorded.
func (p *Port) Down() bool { return p.down.Load() }

// Gone reports whether the interface was deleted under the port (ip link del): the
// reader has stopped, the link reads down, and frames towards the kernel are refused
// (Counters().TxWriteErrors) until the port is closed and opened again.
func (p *Port) Gone() bool { return p.gone.Load() }

// Stats returns the port's counters. RxPackets are frames the kernel transmitted and the
// reader queued, TxPackets frames written to the kernel; RxMissed are frames dropped for
// want of a posted buffer, TxErrors the sum of Counters' TX losses.
func (p *Port) Stats() nic.Stats {
	return nic.Stats{
		RxPackets: p.rxPackets.Load(),
		RxBytes:   p.rxBytes.Load(),
		TxPackets: p.txPackets.Load(),
		TxBytes:   p.txBytes.Load(),
		RxMissed:  p.rxNoBuffer.Load(),
		RxErrors:  p.rxErrors.Load(),
		TxErrors:  p.txRingFull.Load() + p.txBadLen.Load() + p.txWrite.Load() + p.txDown.Load(),
	}
}

// Counters breaks the losses down.
func (p *Port) Counters() Counters {
	return Counters{
		TxRingFull:    p.txRingFull.Load(),
		TxBadLength:   p.txBadLen.Load(),
		TxWriteErrors: p.txWrite.Load(),
		TxDown:        p.txDown.Load(),
		RxNoBuffer:    p.rxNoBuffer.Load(),
	}
}

// Close closes the descriptor, which stops the reader and the writer (frames still in the
// rings are dropped), and gives the interface back: one the port created is removed
// by the kernel, an existing one gets its address, MTU and state back. Each wait is
// bounded. The buffers RxBurst handed out must have been given back.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		close(p.stop)
		var errs []error
		// Closing the descriptor ends a read or write under way in either goroutine.
		if err := p.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("tap %s: close: %w", p.name, err))
		}
		if !waitDone(p.writerDone) {
			errs = append(errs, fmt.Errorf("tap %s: writer did not stop within %v", p.name, stopTimeout))
		}
		readerStopped := waitDone(p.readerDone)
		if !readerStopped {
			errs = append(errs, fmt.Errorf("tap %s: reader did not stop within %v", p.name, stopTimeout))
		}
		if p.release != nil {
			errs = append(errs, p.release())
		}
		errs = append(errs, p.vec.Close())
		if readerStopped {
			p.rx.reclaim()
			if err := p.pool.Close(); err != nil {
				errs = append(errs, fmt.Errorf("tap %s: %w", p.name, err))
			}
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// waitDone waits up to stopTimeout for done to close.
func waitDone(done <-chan struct{}) bool {
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
