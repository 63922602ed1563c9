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
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// watch is the PF-event watcher: on every mailbox interrupt and every watchInterval it
// looks for a PF reset and PF messages, and re-initialises the port when it finds one.
func (p *Port) watch() {
	defer p.watching.Done()
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-tick.C:
			p.timerWakes.Add(1)
		}
		if p.pfEvent() {
			p.reinitUntilDone()
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

// pfMessage handles a PF message that is no reply: a control message with CTS is a link
// change; without CTS, or a NACK, the PF no longer has the VF clear to send. mbMu is
// held.
func (p *Port) pfMessage(w0 uint32) {
	switch {
	case w0&i82576.MsgNack != 0, w0&i82576.MsgCTS == 0:
		p.needReinit = true
	case w0&i82576.MsgTypeMask == i82576.MsgPFControl:
		intel.LinkChanged(&p.core)
	}
}

// reinitUntilDone re-initialises the port, retrying every retryInterval until it works
// or the port is closed, and counts it once. The link reads down meanwhile.
func (p *Port) reinitUntilDone() {
	p.resets.Add(1)
	p.down.Store(true)
	defer p.down.Store(false)
	for {
		err := p.reinit()
		if err == nil {
			p.lastErr.Store(nil)
			return
		}
		p.lastErr.Store(&err)
		select {
		case <-p.stop:
			return
		case <-time.After(retryInterval):
		}
	}
}

// errGates is a re-initialisation that found a queue's owner inside a burst too long.
var errGates = errors.New("a queue's owner did not leave its burst")

// reinit closes the queues' gates, resets the VF, runs the handshake again and brings
// the rings back (see the package doc). The gates stay closed when the handshake fails:
// the queues are the reset VF's no more.
func (p *Port) reinit() error {
	if !gate.CloseAll(time.Now().Add(gateTimeout), &p.rxGate, &p.txGate) {
		return fmt.Errorf("reinit: %w within %v", errGates, gateTimeout)
	}
	intel.ReadCounters(&p.core) // what was counted before the reset
	p.mbMu.Lock()
	err := p.handshake()
	p.mbMu.Unlock()
	if err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	p.cnt.rebaseNext()
	intel.ReadCounters(&p.core)
	rx := p.core.RxQueue(0)
	rx.Rewind()
	if err := p.programRx(); err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	p.txStale = true
	if err := p.initTx(); err != nil {
		return fmt.Errorf("reinit: %w", err)
	}
	p.programInterrupts()
	rx.RingTail()
	if p.armed.Load() {
		// The reset masked the RX cause under a poll thread that may be asleep on it:
		// unmask it again and raise it, so the thread wakes and polls.
		p.bar.Write32(i82576.VTEIMS, rxCauseBit)
		p.bar.Write32(i82576.VTEICS, rxCauseBit)
	}
	gate.OpenAll(&p.rxGate, &p.txGate)
	return nil
}
