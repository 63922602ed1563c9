package vhost

import (
	"fmt"

	"go.uber.org/zap"
)

// withRing runs fn on vring i with its lock held (the poll thread skips it meanwhile).
func (p *Port) withRing(i int, fn func(r *vring) error) error {
	if i < 0 || i >= len(p.rings) {
		return fmt.Errorf("%w: vring %d, the port has %d (%d queue pairs)", errProto, i, len(p.rings), len(p.rings)/numVrings)
	}
	r := &p.rings[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	return fn(r)
}

// startStop starts ring i once the front end sent everything it needs (SET_VRING_KICK
// last). A started guest TX ring is kicked once by the back end itself, so that a poll
// thread asleep since before the front end came looks at it. Disabling a ring does not stop
// it: it stays started and is processed without effect (see RxBurst). Called with r.mu held.
func (p *Port) startStop(i int, r *vring) error {
	if r.ready || !r.canStart() {
		return nil
	}
	var resumed bool
	var err error
	if e := p.armed(r, func() {
		if resumed, err = r.start(p.mem); err == nil {
			r.setNotify(false)
		}
	}); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	if resumed {
		// Not an error (a reconnecting front end sends base 0), but what a migration or
		// reconnect problem looks like: said once per start.
		p.log.Warn("vhost-user ring resumes at the used index in the front end's memory, not at SET_VRING_BASE",
			zap.String("socket", p.cfg.Socket), zap.Int("vring", i), zap.Uint16("base", r.base), zap.Uint16("used", r.usedIdx))
	}
	if i%numVrings == ringGuestTX {
		p.kicks[i/numVrings].self()
	}
	return nil
}

// setFeatures applies the negotiated features to every ring. The header is read by every
// ring's bursts: it changes with all their locks held.
func (p *Port) setFeatures(v uint64) {
	hdrLen := 10
	if v&(1<<featVersion1|1<<featMrgRxBuf) != 0 {
		hdrLen = 12
	}
	p.lockRings()
	for i := range p.rings {
		p.rings[i].eventIdx = v&(1<<featEventIdx) != 0
	}
	p.hdrLen = hdrLen
	p.mrg = v&(1<<featMrgRxBuf) != 0
	p.hdr = [12]byte{}
	if hdrLen == 12 {
		p.hdr[10] = 1 // num_buffers
	}
	p.unlockRings()
}

// lockRings takes every ring's lock, in index order (a poll thread holds at most one).
func (p *Port) lockRings() {
	for i := range p.rings {
		p.rings[i].mu.Lock()
	}
}

func (p *Port) unlockRings() {
	for i := len(p.rings) - 1; i >= 0; i-- {
		p.rings[i].mu.Unlock()
	}
}

// anyStarted reports whether a ring is started (control goroutine).
func (p *Port) anyStarted() bool {
	started := false
	for i := range p.rings {
		p.withRing(i, func(r *vring) error {
			started = started || r.ready
			return nil
		})
	}
	return started
}

// stopRings stops every ring and forgets their configuration (RESET_OWNER, and a front
// end that went away); their callers are closed once no lock is held.
func (p *Port) stopRings() {
	var calls [maxVrings]*caller
	for i := range p.rings {
		p.withRing(i, func(r *vring) error {
			calls[i] = r.clear()
			return nil
		})
	}
	for _, k := range p.kicks {
		k.set(-1)
	}
	p.remapTx()
	for _, c := range calls {
		c.close()
	}
}

// resetState forgets everything a front end set: rings stopped, descriptors closed,
// features back to none, memory unmapped (no ring uses it once they are stopped).
func (p *Port) resetState() {
	p.stopRings()
	p.setFeatures(0)
	p.mem.unmap()
	p.mem = nil
}

// reset forgets the front end that went away. Once the rings are stopped no burst can
// report a fault any more: one still queued is the old front end's and is dropped.
func (p *Port) reset() {
	p.resetState()
	select {
	case <-p.faultCh:
	default:
	}
	p.faultErr.Store(nil)
}
