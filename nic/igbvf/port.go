// Package igbvf is the driver for the Intel 82576's SR-IOV virtual function (8086:10ca,
// what Linux's igbvf drives): the VF reset and the PF↔VF mailbox handshake that gives
// the VF its MAC address, the receive size (SET_LPE) and multicast registration, queue
// pair 0 on the Intel advanced-descriptor rings, RX interrupts through the VF's MSI-X
// vectors (so the adaptive and auto idle policies work on a VF), and the events of the
// PF that owns it, handled inside the port. Importing it registers the driver "igbvf"
// with nic.Register.
//
// PF events. A PF reset (RSTI/RSTD in V2PMAILBOX, "ip link set PF down/up"), a PF
// message that takes clear to send away, and a PF message the VF cannot read make the
// port ask its user for Recover (nic.Recoverer), which runs with no goroutine in the
// queues (the dataplane's Exclusive): it resets the VF, runs the mailbox handshake again,
// takes the MAC the PF gives it, and brings the same rings back: posted receive buffers
// stay posted; of the frames queued for transmit, those the VF completed before the
// reset are freed as sent and the others discarded (TxErrors), by the queue's owner at
// its next burst. While the PF stays down Recover fails and the queues stay stopped; the
// user retries with a growing interval (RecoverBackoff: 50 ms doubling to 10 s, as Linux's
// igbvf resets a VF at most every 10 s), and the port, looking at the mailbox every 50 ms
// meanwhile, asks again at once when the PF shows it is back. Each PF event is counted
// once in Stats().DeviceResets, however many attempts it took; link changes the PF
// announces are counted in LinkChanges. The link reads down from the event until a
// Recover succeeds.
//
// A PF that is down when the port opens (RSTI held until the PF's interface is up, or a
// PF that does not answer) does not fail Open: the port opens with the link down and a
// random locally administered address, as Linux's igbvf probes ("PF still in reset
// state"), asks for Recover, and comes up at the first one after the PF answers;
// ReinitError says why it is not up yet. A PF that answers wrongly fails Open.
//
// Statistics. The VF's counters are 32 bits wide and wrap; the watcher reads them every
// 2 s (its timer), so that no wrap is lost, and across a PF reset that clears them (as
// QEMU's does) a lower value counts from zero, not as a wrap. RxMissed is the queue's
// drop counter (RQDPC: frames dropped for want of a descriptor).
//
// An administrator's new MAC for the VF ("ip link set PF vf N mac ...") is announced to
// no VF by Linux's igb (it logs "Reload the VF driver to make this change effective") and
// shows in nothing a VF can read without changing it: the port takes the new address at
// its next re-initialisation. A VF the PF has no address for (VF_RESET answered NACK)
// picks a random locally administered one and has the PF set it, as Linux's igbvf does.
package igbvf

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
)

func init() {
	intel.Register("igbvf", Match, intel.DeviceIDs(deviceIDs, func(name string) string { return name }), facts, Open)
}

// Port is an open 82576 VF port. It implements nic.Port; the methods it does not change
// forward to the shared Intel core it holds.
type Port struct {
	core intel.Port
	bar  pci.Region
	cfg  nic.Config
	mac  atomic.Pointer[net.HardwareAddr]

	mbMu       sync.Mutex // the mailbox, and the PF events below
	mbx        mailbox
	needReinit bool     // set under mbMu by what the watcher finds
	events     uint64   // PF events found (under mbMu); the open of a port with the PF down is one
	served     uint64   // events up to which a Recover's handshake ran (under mbMu)
	filt       rxFilter // the multicast filter asked for (under mbMu)
	closed     bool     // Close took the registers (under mbMu)

	// The queues' state, written only by open and Recover (which runs with no goroutine in
	// the queues: nic.Recoverer) and read plainly by their owner; armed the other way.
	stopped  bool // the VF was reset and not brought back: bursts do nothing
	txStale  bool // the TX ring must be taken back before the next burst
	rxPosted bool // receive buffers are posted on the ring
	armed    bool // RX queue 0's interrupt is unmasked (the owner's, read by Recover)

	needs  nic.RecoverSignal
	down   atomic.Bool // from a PF event until a Recover succeeds: the link reads down
	resets atomic.Uint64

	cnt counters

	kick       chan struct{}
	timerWakes atomic.Uint64 // the watcher's wake-ups by its timer, not by an interrupt
	looks      atomic.Uint64 // the watcher's looks at the mailbox
	stop       chan struct{}
	watching   sync.WaitGroup
	lastErr    atomic.Pointer[error]
}

var _ nic.Recoverer = (*Port)(nil)

// layout is where the VF keeps the registers the shared code touches: queue 0's ring
// blocks and the VF's interrupt mask registers; its statistics are read through
// Counters.
func (p *Port) layout() intel.Layout {
	return intel.Layout{
		RxQueue:  i82576.VFRXBase,
		TxQueue:  i82576.VFTXBase,
		EIMS:     i82576.VTEIMS,
		EIMC:     i82576.VTEIMC,
		Counters: p.cnt.read,
		QueueDrops: func(q int) uint32 {
			return i82576.VFRXBase + i82576.VFQStride*uint32(q) + i82576.QRQDPC
		},
	}
}

// Open resets dev, an 82576 VF, runs the mailbox handshake with its PF (the MAC
// address, the receive size, multicast), starts queue pair 0 with MSI-X vector 0 for
// receive and vector 1 for the mailbox, and waits up to cfg.LinkTimeout for the PF's
// link. A VF has no INTx: the default interrupt mode is MSI-X, and IRQINTx fails. A PF
// in reset or silent does not fail it (see the package doc): the port opens with the
// link down and a random locally administered address until the PF answers.
//
// On success the port owns dev and closes it in Close. On failure Open leaves the device
// quiesced and the caller closes it.
func Open(dev pci.Device, cfg nic.Config) (*Port, error) {
	if _, err := intel.Lookup(dev, "igbvf", deviceIDs); err != nil {
		return nil, err
	}
	p := &Port{kick: make(chan struct{}, 1), stop: make(chan struct{})}
	nop := func(int) {}
	ops := intel.Ops{Mask: p.mask, Stop: func() {}, Link: p.readLink, UnmaskINTx: nop, MaskINTx: nop}
	if err := intel.Attach(&p.core, dev, cfg, limits, p.layout(), ops); err != nil {
		return nil, err
	}
	if err := p.open(intel.BAR(&p.core), intel.Config(&p.core)); err != nil {
		return nil, intel.Abort(&p.core, err)
	}
	p.watching.Add(1)
	go p.watch()
	if p.stopped {
		p.needs.Raise() // the PF was down: the first Recover after it answers brings the port up
	}
	return p, nil
}

// open runs the whole bring-up; Open has intel.Abort undo it on failure.
func (p *Port) open(bar pci.Region, cfg nic.Config) error {
	p.bar, p.cfg = bar, cfg
	p.cnt.bar = bar
	p.mbx = mailbox{bar: bar, timeout: mbxTimeout, onMessage: p.pfMessage}
	p.cnt.rebase = true // what an earlier user counted is not the port's
	p.mbMu.Lock()
	err := p.handshake()
	p.mbMu.Unlock()
	if err != nil && !errors.Is(err, errPFReset) && !errors.Is(err, errNoAnswer) {
		return err
	}
	intel.ReadCounters(&p.core)
	if err != nil {
		// The PF is down: the rings are set up in memory only, the queues stay stopped
		// and a Recover brings the port up (reinit programs everything).
		// Until the PF gives one, the port has a random address, as Linux's igbvf
		// assigns at probe; the PF's VF_RESET reply replaces it, or, if the PF has none
		// for the VF, is asked to take it.
		mac, merr := randomMAC()
		if merr != nil {
			return merr
		}
		p.mac.Store(&mac)
		p.lastErr.Store(&err)
		p.events = 1 // not counted in DeviceResets: the port was never up
		p.cnt.pfEvent()
		p.down.Store(true)
		p.stopped = true
		return intel.StartQueues(&p.core, p.setupInterrupts)
	}
	if err := intel.StartQueues(&p.core, p.initRx, p.initTx, p.setupInterrupts); err != nil {
		return err
	}
	p.waitLink(cfg.LinkTimeout)
	return nil
}

// MAC implements nic.Port: the address the PF gave the VF at the last handshake.
func (p *Port) MAC() net.HardwareAddr {
	if m := p.mac.Load(); m != nil {
		return *m
	}
	return nil
}

// RxBurst implements nic.Port; it takes nothing while the VF waits for a Recover that
// succeeds.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int {
	if p.stopped {
		return 0
	}
	return p.core.RxBurst(q, bufs)
}

// TxBurst implements nic.Port; it takes nothing while the VF waits for a Recover that
// succeeds, and after one first frees the frames the reset discarded.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int {
	if p.stopped {
		return 0
	}
	if p.txStale {
		p.core.TxQueue(q).Discard()
		p.txStale = false
	}
	return p.core.TxBurst(q, bufs)
}

// EnableRxInterrupt implements nic.Port.
func (p *Port) EnableRxInterrupt(q int) {
	p.armed = true
	p.core.EnableRxInterrupt(q)
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	p.armed = false
	p.core.DisableRxInterrupt(q)
}

// Stats implements nic.Port, with the port's re-initialisations in DeviceResets.
func (p *Port) Stats() nic.Stats {
	s := p.core.Stats()
	s.DeviceResets = p.resets.Load()
	return s
}

// Close implements nic.Port: it stops the PF-event watcher, then closes the port.
func (p *Port) Close() error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.watching.Wait()
	p.mbMu.Lock()
	defer p.mbMu.Unlock()
	p.closed = true
	return p.core.Close()
}

// ReinitError is the error of the last re-initialisation attempt that failed (the port
// keeps asking for Recover), or nil once one succeeded.
func (p *Port) ReinitError() error {
	if e := p.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// mask masks the VF's interrupts.
func (p *Port) mask() { p.bar.Write32(i82576.VTEIMC, intelnic.AllCauses) }

// readLink reads the PF's link from VTSTATUS; it is down from a PF event until a
// Recover succeeds.
func (p *Port) readLink() nic.Link {
	if p.down.Load() {
		return nic.Link{}
	}
	return intel.Link82576(p.bar.Read32(i82576.VTSTATUS))
}

// waitLink waits up to timeout for the PF's link.
func (p *Port) waitLink(timeout time.Duration) {
	_ = intel.WaitSet(p.bar, i82576.VTSTATUS, i82576.StatusLU, timeout)
}
