package vhost

import "fmt"

// withRing runs fn on vring i with its lock held (the poll thread skips it meanwhile).
func (p *Port) withRing(i int, fn func(r *vring) error) error {
	if i < 0 || i >= numVrings {
		return fmt.Errorf("%w: vring %d, have %d", errProto, i, numVrings)
	}
	r := &p.rings[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	return fn(r)
}

// startStop starts ring i once the front end sent everything it needs and stops it when
// it is disabled. A started guest TX ring is kicked once by the back end itself, so that a
// poll thread asleep since before the front end came looks at it. Called with r.mu held.
func (p *Port) startStop(i int, r *vring) error {
	switch {
	case r.ready && !r.enabled:
		r.base = r.lastAvail
		r.stop()
	case !r.ready && r.canStart():
		if err := r.start(p.mem); err != nil {
			return err
		}
		r.setNotify(false)
		if i == ringGuestTX {
			p.kick.self()
		}
	}
	return nil
}

// setFeatures applies the negotiated features to both rings.
func (p *Port) setFeatures(v uint64) {
	hdrLen := 10
	if v&(1<<featVersion1|1<<featMrgRxBuf) != 0 {
		hdrLen = 12
	}
	for i := range p.rings {
		p.withRing(i, func(r *vring) error {
			r.eventIdx = v&(1<<featEventIdx) != 0
			return nil
		})
	}
	// The header is read by both rings' bursts: change it with both locks held.
	p.rings[0].mu.Lock()
	p.rings[1].mu.Lock()
	p.hdrLen = hdrLen
	p.hdr = [12]byte{}
	if hdrLen == 12 {
		p.hdr[10] = 1 // num_buffers
	}
	p.rings[1].mu.Unlock()
	p.rings[0].mu.Unlock()
}

// stopRings stops both rings and forgets their configuration (RESET_OWNER).
func (p *Port) stopRings() {
	for i := range p.rings {
		p.withRing(i, func(r *vring) error {
			r.clear()
			return nil
		})
	}
	p.kick.set(-1)
}

// reset forgets the front end that went away: rings stopped, descriptors closed, memory
// unmapped.
func (p *Port) reset() {
	p.stopRings()
	p.setFeatures(0)
	p.mem.unmap()
	p.mem = nil
	select {
	case <-p.faultCh:
	default:
	}
	p.faultErr.Store(nil)
}
