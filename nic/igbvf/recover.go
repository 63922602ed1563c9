package igbvf

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic/internal/gate"
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
// looks for a PF reset and PF messages, and re-initialises the port when it finds one.
// At every watchInterval it also reads the VF's statistics registers, before they can
// wrap twice. A port opened with the PF down is brought up first.
func (p *Port) watch() {
	defer p.watching.Done()
	if p.openErr != nil {
		p.reinitUntilDone(false, p.openErr)
	}
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		timer := false
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-tick.C:
			p.timerWakes.Add(1)
			timer = true
		}
		event := p.pfEvent()
		p.looks.Add(1)
		switch {
		case event:
			p.reinitUntilDone(true, nil)
		case timer:
			intel.ReadCounters(&p.core)
		}
	}
}

// pfEvent reads the mailbox and reports whether the port must re-initialise: a PF reset
// (RSTI, RSTD), a PF message that takes clear to send away, or a PF message the VF cannot
// read.
func (p *Port) pfEvent() bool {
	p.mbMu.Lock()
	defer p.mbMu.Unlock()
	b := &p.mbx
	p.needReinit = false
	if b.take(i82576.MbxRSTI | i82576.MbxRSTD) {
		return true
	}
	if err := b.pending(); err != nil {
		return true
	}
	return p.needReinit
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

// reinitUntilDone re-initialises the port, retrying until it works or the port is
// closed, and counts it once (unless count is false: the bring-up of a port opened with
// the PF down). The link reads down meanwhile. failed, if set, is the error of an
// attempt already made: the first attempt waits as after it.
//
// Between attempts it waits retryInterval, doubling up to maxRetryInterval, but looks at
// the mailbox every retryInterval and tries again at once when the PF shows it is back.
func (p *Port) reinitUntilDone(count bool, failed error) {
	if count {
		p.resets.Add(1)
	}
	p.cnt.pfEvent()
	p.down.Store(true)
	defer p.down.Store(false)
	wait := retryInterval
	for err := failed; ; {
		if err != nil {
			if !p.waitForPF(wait, errors.Is(err, errPFReset)) {
				return
			}
			wait = min(2*wait, maxRetryInterval)
		}
		if err = p.reinit(); err == nil {
			p.lastErr.Store(nil)
			return
		}
		p.lastErr.Store(&err)
	}
}

// waitForPF waits up to d before the next attempt to re-initialise, reading V2PMAILBOX
// every retryInterval: it ends early once the PF shows it is back, that is RSTI clear
// and either the last attempt found the PF in reset (inReset) or the PF signalled (RSTD,
// a message). It reports false if the port was closed.
func (p *Port) waitForPF(d time.Duration, inReset bool) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		select {
		case <-p.stop:
			return false
		case <-time.After(min(left, retryInterval)):
		}
		p.mbMu.Lock()
		v := p.mbx.status()
		p.mbMu.Unlock()
		if v&i82576.MbxRSTI == 0 && (inReset || v&(i82576.MbxRSTD|i82576.MbxPFSts) != 0) {
			return true
		}
	}
}

// errGates is a re-initialisation that found a queue's owner inside a burst too long.
var errGates = errors.New("a queue's owner did not leave its burst")

// reinit closes the queues' gates, resets the VF, runs the handshake again and brings
// the rings back (see the package doc). The gates stay closed when the handshake fails:
// the queues are the reset VF's no more. The statistics are read before the reset (what
// was counted up to it) and after the handshake (what the PF's and the VF's resets left).
func (p *Port) reinit() error {
	if !gate.CloseAll(time.Now().Add(gateTimeout), &p.rxGate, &p.txGate) {
		return fmt.Errorf("reinit: %w within %v", errGates, gateTimeout)
	}
	intel.ReadCounters(&p.core)
	p.mbMu.Lock()
	err := p.handshake()
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
	if p.armed.Load() {
		// The reset masked the RX cause under a poll thread that may be asleep on it:
		// unmask it again and raise it, so the thread wakes and polls.
		p.bar.Write32(i82576.VTEIMS, rxCauseBit)
		p.bar.Write32(i82576.VTEICS, rxCauseBit)
	}
	gate.OpenAll(&p.rxGate, &p.txGate)
	return nil
}
