package daemon

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/afxdp"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// reopenInterval is how often an absent port's address is checked for the device's
// return (a rescan, a re-bind to vfio-pci).
const reopenInterval = 250 * time.Millisecond

// simPresent says whether a sim port's model may be re-made after its removal; tests
// hold a port absent with it. A model has no kernel to wait for: by default it is back
// at the next check.
var simPresent = func(config.Port) bool { return true }

// watchRemoval arms the device-request interrupt of p's device (vfio-pci, and the model)
// and, when it has one, puts p's NIC behind a livePort and serves its requests: on a
// request the port leaves the dataplane and its device is closed, so the kernel's unbind
// or remove goes through, and when the address is back the port is re-opened and swapped
// in. A device without the interrupt (uio, an old kernel) is driven as before: a remove
// then waits until uiod exits.
func (d *Daemon) watchRemoval(p *port) {
	r, ok := p.requester()
	if !ok {
		return
	}
	ch, err := r.Events()
	if err != nil {
		d.log.Warn("no device-request interrupt: an unbind or remove of the device waits until uiod exits",
			zap.String("port", p.cfg.Name), zap.Error(err))
		return
	}
	lp := newLivePort(p.nic)
	lp.log = d.log.With(zap.String("port", p.cfg.Name))
	p.nic, p.live = lp, lp
	go d.serveRemoval(p, lp, ch)
}

// serveRemoval handles p's device events until the daemon stops.
func (d *Daemon) serveRemoval(p *port, lp *livePort, ch <-chan pci.Event) {
	log := d.log.With(zap.String("port", p.cfg.Name), p.deviceField())
	for {
		for ev := range ch {
			if ev != pci.EventRequest {
				log.Warn("device reported an error; the driver's own recovery (TX hang, link) handles what follows", zap.Stringer("event", ev))
				continue
			}
			start := time.Now()
			err := d.removePort(p, lp)
			if err != nil {
				log.Error("release of a device the kernel asked for", zap.Error(err))
			}
			log.Warn("device requested by the kernel: port absent, device released", zap.Duration("release", time.Since(start)))
		}
		if lp.present() || lp.isClosed() {
			return // closed by the daemon's shutdown
		}
		next, ok := d.awaitReturn(p, lp, log)
		if !ok {
			return
		}
		ch = next
	}
}

// removePort takes p's NIC out of the dataplane and closes it — queues off, interrupts
// masked, bus mastering off, DMA memory freed, the device's descriptors closed — while
// the poll threads wait between two turns: its rings hold buffers of the other ports'
// mempools, which only the threads may touch otherwise.
func (d *Daemon) removePort(p *port, lp *livePort) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	release := func() {
		var np nic.Port
		if np, err = lp.take(); err != nil || np == nil {
			return
		}
		lp.countRemoval()
		err = np.Close()
		if p.model != nil {
			err = errors.Join(err, p.model.Close())
			p.model = nil
		}
		p.dev = nil
	}
	if d.dp == nil {
		release()
		return err
	}
	if xerr := d.dp.Exclusive(release); xerr != nil {
		return xerr
	}
	return err
}

// awaitReturn checks every reopenInterval whether p's device is back and, once it is,
// re-opens the port, swaps it in and returns its events. ok is false when the daemon
// stopped first.
func (d *Daemon) awaitReturn(p *port, lp *livePort, log *zap.Logger) (<-chan pci.Event, bool) {
	t := time.NewTicker(reopenInterval)
	defer t.Stop()
	var lastErr string
	for range t.C {
		ch, err := d.reopen(p, lp)
		switch {
		case errors.Is(err, errStopped):
			return nil, false
		case errors.Is(err, errNotBack):
		case err != nil:
			if err.Error() != lastErr {
				log.Warn("re-open of the absent port", zap.Error(err))
				lastErr = err.Error()
			}
		default:
			log.Info("device back: port re-opened")
			return ch, true
		}
	}
	return nil, false
}

var (
	errStopped = errors.New("daemon stopped")
	errNotBack = errors.New("device not back")
)

// reopen opens p again if its device is back (bound to vfio-pci again; a model at once),
// arms its events and swaps it into the live port; then the poll threads' idlers are
// rebuilt, so that they sleep on the new RX vectors.
func (d *Daemon) reopen(p *port, lp *livePort) (<-chan pci.Event, error) {
	d.mu.Lock()
	if !d.running || lp.isClosed() {
		d.mu.Unlock()
		return nil, errStopped
	}
	if !d.devicePresent(p.cfg) {
		d.mu.Unlock()
		return nil, errNotBack
	}
	var reuse wire.Port
	if p.cfg.Driver == config.DriverSim {
		reuse = p.wire
	}
	np, err := d.backends.openPortOn(p.cfg, reuse)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	ch, err := d.adopt(p, lp, np)
	dp := d.dp
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if dp != nil {
		if err := dp.SetPolicy(dp.Policy()); err != nil {
			d.log.Warn("re-opened port: the poll threads keep their old interrupt vectors and wake by wait_timeout",
				zap.String("port", p.cfg.Name), zap.Error(err))
		}
	}
	return ch, nil
}

// adopt checks that the re-opened np matches the live port, arms its events and swaps it
// in. Called with d.mu held; on error np is closed.
func (d *Daemon) adopt(p *port, lp *livePort, np *port) (<-chan pci.Event, error) {
	fail := func(err error) (<-chan pci.Event, error) {
		np.nic.Close()
		if np.model != nil {
			np.model.Close()
		}
		return nil, err
	}
	if np.nic.NumRxQueues() != lp.nrx || np.nic.NumTxQueues() != lp.ntx {
		return fail(fmt.Errorf("re-opened with %d/%d queues, was %d/%d", np.nic.NumRxQueues(), np.nic.NumTxQueues(), lp.nrx, lp.ntx))
	}
	r, ok := np.requester()
	if !ok {
		return fail(errors.New("re-opened device has no device-request interrupt"))
	}
	ch, err := r.Events()
	if err != nil {
		return fail(err)
	}
	if !lp.put(np.nic) {
		return fail(errStopped)
	}
	p.dev, p.model = np.dev, np.model
	return ch, nil
}

// devicePresent reports whether an absent port's device is back: bound to its driver
// again under the root, or for a model, whatever simPresent says.
func (d *Daemon) devicePresent(pc config.Port) bool {
	switch pc.Driver {
	case config.DriverSim:
		return simPresent(pc)
	case config.DriverAFXDP:
		return afxdp.Ready(pc.Interface)
	}
	h, err := pcihost.New(d.opts.Root)
	if err != nil {
		return false
	}
	return h.CheckBound(pc.Addr(), pc.Driver) == nil
}

// absent reports whether the kernel took p's device and it is not back yet.
func (p *port) absent() bool { return p.live != nil && !p.live.present() }

// removalCounts returns how often p's device went away and came back.
func (p *port) removalCounts() (removals, reopens uint64) {
	if p.live == nil {
		return 0, 0
	}
	return p.live.counts()
}

// closeUnlessReused closes w, a sim port's wire, unless it is reuse (the wire of a port
// being re-opened, which outlives the attempt).
func closeUnlessReused(w, reuse wire.Port) {
	if w != reuse {
		w.Close()
	}
}

// SimDevice returns the device model behind the sim port named port, for tests and the
// soak to inject faults and removals into (RequestRemoval, Remove); ok is false for
// another kind of port, an unknown name, or a port that is absent.
func (d *Daemon) SimDevice(port string) (dev *sim.Device, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.ports {
		if p.cfg.Name == port && p.model != nil {
			return p.model.Device(), true
		}
	}
	return nil, false
}
