package virtio

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// A device sets DEVICE_NEEDS_RESET when it meets something it cannot go on from (QEMU: a
// ring it cannot use), and then moves no frame until the driver resets it. The driver
// looks for it on every configuration change (the MSI-X configuration vector's watcher,
// or the ISR's configuration bit with INTx) and on every Link call, reports the link down
// while the device is broken, and asks the port's user for Recover (nic.Recoverer), which
// runs with no goroutine in the queues (the dataplane's Exclusive): it resets the device,
// negotiates the same features, rewinds the rings (posted receive buffers stay posted;
// frames in flight on a transmit queue are discarded, their buffers freed by the queue's
// owner at its next burst and counted in TxErrors) and brings the device back to
// DRIVER_OK on the same memory and vectors. Each reset is counted in Stats.DeviceResets.
// A reset that fails leaves the queues stopped (their bursts return 0) until a later
// Recover succeeds; the port asks again no sooner than retryAfter.

// retryAfter is how long a failed recovery waits before the next try.
const retryAfter = time.Second

// broken reports whether status says the device needs the driver to reset it.
func broken(s uint8) bool {
	return s&(virtiospec.StatusNeedsReset|virtiospec.StatusFailed) != 0 || s&virtiospec.StatusDriverOK == 0
}

// configChanged handles a configuration-change notification: it is counted, and a device
// that needs a reset asks for Recover. wait false gives up when Close holds the port (the
// INTx path, on a poll thread).
func (p *Port) configChanged(wait bool) {
	p.linkCh.Add(1)
	if wait {
		p.closeMu.RLock()
	} else if !p.closeMu.TryRLock() {
		return
	}
	defer p.closeMu.RUnlock()
	if !p.closed && broken(p.t.status()) {
		p.askRecover()
	}
}

// askRecover asks the port's user for Recover, unless the last attempt failed less than
// retryAfter ago (the user retries after RecoverBackoff itself). closeMu is held.
func (p *Port) askRecover() {
	if p.closed || time.Now().UnixNano() < p.retryAt.Load() {
		return
	}
	p.needs.Raise()
}

// OnRecoverNeeded implements nic.Recoverer.
func (p *Port) OnRecoverNeeded(f func()) { p.needs.Set(f) }

// RecoverBackoff implements nic.Recoverer: a failed reset is tried again after a second.
func (p *Port) RecoverBackoff() (first, max time.Duration) { return retryAfter, retryAfter }

// RecoverError is the error of the last recovery from DEVICE_NEEDS_RESET that failed
// (the port's queues then stay stopped until a later one succeeds), or nil.
func (p *Port) RecoverError() error {
	if e := p.recoverErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Recover implements nic.Recoverer: it resets and re-initialises a broken device on the
// port's memory, and does nothing to one that is not.
func (p *Port) Recover() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed || !broken(p.t.status()) {
		p.needs.Clear()
		return nil
	}
	p.stopped = true
	p.resets.Add(1)
	if err := p.reinit(); err != nil {
		p.t.addStatus(virtiospec.StatusFailed)
		err = fmt.Errorf("recover: %w", err) // the queues stay stopped: the rings are the reset device's no more
		p.recoverErr.Store(&err)
		p.retryAt.Store(time.Now().Add(retryAfter).UnixNano())
		return err
	}
	p.recoverErr.Store(nil)
	p.retryAt.Store(0)
	p.needs.Clear()
	p.stopped = false
	return nil
}

// reinit resets the device and brings it up again on the port's rings.
func (p *Port) reinit() error {
	if err := p.t.reset(); err != nil {
		return err
	}
	had := p.features
	if err := p.negotiate(p.opt); err != nil {
		return err
	}
	if p.features != had {
		return fmt.Errorf("device negotiated features %#x after the reset, %#x before", p.features, had)
	}
	for _, q := range p.rx {
		q.rewind()
	}
	for _, q := range p.tx {
		q.rewind()
	}
	if p.ctrl != nil {
		p.ctrl.rewind()
	}
	if err := p.program(); err != nil {
		return err
	}
	return p.restoreFilter() // the reset made the device forget it
}

// rewind returns the ring to its state before the device first saw it: available and used
// rings zeroed, indices 0. Descriptors and header slots stay.
func (r *vring) rewind() {
	clear(r.mem.Bytes[r.l.avail:r.l.hdrs])
	r.availIdx = 0
}

// rewind re-posts every buffer the queue holds on the rewound ring, with the interrupt
// request as it was.
func (q *rxQueue) rewind() {
	r := q.ring
	r.rewind()
	q.lastUsed, q.quietAt, q.posted = 0, 0, 0
	for s, b := range q.bufs {
		if b != nil {
			r.push(2 * uint16(s))
			q.posted++
		}
	}
	if q.armed {
		q.request(0)
	} else {
		q.suppress(0)
	}
	r.publish()
}

// rewind empties the queue: the frames in flight are the reset device's no more. Their
// buffers are left for the owner's next burst to free (their pools are the owner's).
func (q *txQueue) rewind() {
	q.ring.rewind()
	for s, b := range q.bufs {
		if b != nil {
			q.orphans = append(q.orphans, b)
			q.bufs[s] = nil
		}
	}
	q.free = q.free[:0]
	for s := len(q.bufs) - 1; s >= 0; s-- {
		q.free = append(q.free, uint16(s))
	}
	q.inFlight, q.lastUsed, q.quietAt = 0, 0, 0
	q.suppress(0)
	q.ring.publish()
}

// rewind empties the control queue.
func (q *ctrlQueue) rewind() {
	q.ring.rewind()
	q.lastUsed = 0
	q.suppress(0)
	q.ring.publish()
}
