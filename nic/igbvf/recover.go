package igbvf

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic/internal/intel"
)

// mailboxInterrupt serves the mailbox vector: its cause is cleared first (a message
// after it raises a new one) and the watcher looks at the mailbox.
func (p *Port) mailboxInterrupt() {
	p.bar.Write32(i82576.VTEICR, 1<<mbxVector)
	p.kickWatcher()
}

// kickWatcher makes the watcher look at the mailbox.
func (p *Port) kickWatcher() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// watch is the PF-event watcher: on every mailbox interrupt and every watchInterval it
// looks for a PF reset and PF messages, and asks for Recover when it finds one. At every
// watchInterval it also reads the VF's statistics registers, before they can wrap twice.
// While the last attempt to re-initialise failed it looks at the mailbox (every
// retryInterval, and at every interrupt) only to ask again at once when the PF shows it is
// back; the user's backoff schedules the other attempts.
func (p *Port) watch() {
	defer p.watching.Done()
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		failed := p.ReinitError() != nil
		var retryC <-chan time.Time
		if failed {
			if retry == nil {
				retry = time.NewTimer(retryInterval)
			}
			retryC = retry.C
		}
		timer := false
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-tick.C:
			p.timerWakes.Add(1)
			timer = true
		case <-retryC:
			retry.Reset(retryInterval)
		}
		p.looks.Add(1)
		switch {
		case failed:
			// The event is pending and the PF was not back at the last attempt: the
			// mailbox says only whether to try before the backoff ends (what it holds
			// otherwise is the reset's, which the next attempt takes).
			if p.pfBack() {
				p.needs.Raise()
			}
		case p.pfEvent():
			p.needs.Raise()
		case timer:
			intel.ReadCounters(&p.core)
		}
	}
}

// pfEvent reads the mailbox and reports whether the port must re-initialise: a PF reset
// (RSTI, RSTD), a PF message that takes clear to send away, or a PF message the VF cannot
// read. An event that comes while none is pending is counted in DeviceResets, and the link
// reads down from it.
func (p *Port) pfEvent() bool {
	p.mbMu.Lock()
	defer p.mbMu.Unlock()
	b := &p.mbx
	p.needReinit = false
	event := b.take(i82576.MbxRSTI | i82576.MbxRSTD)
	if !event && b.pending() != nil {
		event = true
	}
	if !event && !p.needReinit {
		return false
	}
	if p.events == p.served {
		p.resets.Add(1)
		p.cnt.pfEvent()
		p.down.Store(true)
	}
	p.events++
	return true
}

// pfMessage handles a PF message that is no reply: one without CTS means the PF no longer
// has the VF clear to send (a PF reset's control message, or the bare NACK Linux's igb
// sends a VF that is not); a control message with CTS is a link change. A reply with CTS
// to something else (a late ACK or NACK of a request that timed out) changes nothing.
// mbMu is held.
func (p *Port) pfMessage(w0 uint32) {
	switch {
	case w0&i82576.MsgCTS == 0:
		p.needReinit = true
	case w0&(i82576.MsgAck|i82576.MsgNack) == 0 && w0&i82576.MsgTypeMask == i82576.MsgPFControl:
		intel.LinkChanged(&p.core)
	}
}

// pfBack reads V2PMAILBOX after a failed attempt to re-initialise and reports whether the
// PF shows it is back: RSTI clear and either the last attempt found the PF in reset or
// the PF signalled (RSTD, a message).
func (p *Port) pfBack() bool {
	inReset := errors.Is(p.ReinitError(), errPFReset)
	p.mbMu.Lock()
	v := p.mbx.status()
	p.mbMu.Unlock()
	return v&i82576.MbxRSTI == 0 && (inReset || v&(i82576.MbxRSTD|i82576.MbxPFSts) != 0)
}

// OnRecoverNeeded implements nic.Recoverer.
func (p *Port) OnRecoverNeeded(f func()) { p.needs.Set(f) }

// RecoverBackoff implements nic.Recoverer: retryInterval, doubling to maxRetryInterval
// (Linux's igbvf resets a VF at most every 10 s).
func (p *Port) RecoverBackoff() (first, max time.Duration) { return retryInterval, maxRetryInterval }

// Recover implements nic.Recoverer: after a PF event (or an open that found the PF down)
// it re-initialises the port (reinit); with none pending it does nothing. On failure the
// queues stay stopped and ReinitError says why.
func (p *Port) Recover() error {
	p.mbMu.Lock()
	pending := p.events != p.served
	if !pending {
		p.needs.Clear()
	}
	p.mbMu.Unlock()
	if !pending {
		return nil
	}
	p.stopped = true
	if err := p.reinit(); err != nil {
		p.lastErr.Store(&err)
		p.kickWatcher() // it looks at the mailbox every retryInterval from now on
		return err
	}
	p.stopped = false
	p.lastErr.Store(nil)
	p.mbMu.Lock()
	again := p.events != p.served // an event after the handshake began
	if !again {
		p.needs.Clear()
		p.down.Store(false)
	}
	p.mbMu.Unlock()
	if again {
		p.needs.Raise()
	}
	return nil
}

// reinit resets the VF, runs the handshake again and brings the rings back (see the
// package doc); the queues are stopped. The statistics are read before the reset (what
// was counted up to it) and after the handshake (what the PF's and the VF's resets left).
//
// After an attempt that found the PF in reset, a VF whose mailbox still shows RSTI is not
// reset again: the attempt fails at once instead of waiting resetTimeout for a PF that has
// not come back, with every poll thread of the dataplane held meanwhile (nic.Recoverer).
// RSTI clears when the PF's interface is up, whatever the VF did.
func (p *Port) reinit() error {
	p.mbMu.Lock()
	if errors.Is(p.ReinitError(), errPFReset) && p.mbx.status()&i82576.MbxRSTI != 0 {
		p.mbMu.Unlock()
		return fmt.Errorf("reinit: RSTI still set: %w (is the PF's interface up?)", errPFReset)
	}
	p.mbMu.Unlock()
	intel.ReadCounters(&p.core)
	p.mbMu.Lock()
	events := p.events
	err := p.handshake()
	if err == nil {
		p.served = events
	}
	p.mbMu.Unlock()
	if err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	intel.ReadCounters(&p.core)
	p.cnt.settled()
	rx := p.core.RxQueue(0)
	if p.rxPosted {
		rx.Rewind()
	}
	if err := p.programRx(); err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	p.txStale = true
	if err := p.initTx(); err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	p.programInterrupts()
	if p.rxPosted {
		rx.RingTail()
	} else {
		rx.Fill()
		p.rxPosted = true
	}
	if p.armed {
		// The reset masked the RX cause under a poll thread that may be asleep on it:
		// unmask it again and raise it, so the thread wakes and polls.
		p.bar.Write32(i82576.VTEIMS, rxCauseBit)
		p.bar.Write32(i82576.VTEICS, rxCauseBit)
	}
	return nil
}
