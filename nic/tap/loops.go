package tap

import (
	"time"

	"go.uber.org/zap"
)

// readRetry is how long the reader waits after a failed read before it reads again;
// each further failure in a row doubles the wait up to readRetryMax. A read error that
// lasts then costs one read a second instead of a thousand, and is logged once, as is
// the recovery. The descriptor closing ends the loop, and so does the interface's
// deletion under the daemon (EBADFD: a descriptor the kernel detached, for good), which
// is logged at once and reads the port's link down (Gone).
const (
	readRetry    = time.Millisecond
	readRetryMax = time.Second
)

// readLoop is the reader goroutine: it blocks in the runtime's poller until the kernel
// transmits a frame, reads it into the next posted buffer and publishes it, signalling the
// RX vector if it is armed. With no buffer posted (RxBurst has not kept up) it reads the
// frame into scratch and, unless a buffer was posted meanwhile, drops it: the kernel's
// queue never backs up behind the ring.
func (p *Port) readLoop(scratch []byte) {
	defer close(p.readerDone)
	wait, logged := time.Duration(0), false
	for {
		b := p.rx.next()
		dst := scratch
		if b != nil {
			dst = b.Data()
		}
		n, err := p.f.Read(dst)
		if err != nil {
			if p.closed.Load() {
				return
			}
			p.rxErrors.Add(1)
			if detached(err) {
				// The interface was deleted: the descriptor is attached to nothing and
				// never will be again (a new TAP of the name is another interface).
				p.gone.Store(true)
				p.log.Warn("tap: interface deleted under the daemon; its kernel path is down until the port is closed",
					zap.String("tap", p.name), zap.Error(err))
				return
			}
			wait = min(max(2*wait, readRetry), readRetryMax)
			if wait == readRetryMax && !logged {
				logged = true
				p.log.Warn("tap: reads keep failing (was the interface deleted?); retrying once a second",
					zap.String("tap", p.name), zap.Error(err))
			}
			select { // Close does not wait out a long retry
			case <-time.After(wait):
			case <-p.stop:
				return
			}
			continue
		}
		if logged {
			logged = false
			p.log.Info("tap: reads work again", zap.String("tap", p.name))
		}
		wait = 0
		if b == nil && n <= p.maxFrame {
			// RxBurst may have posted buffers while the read was blocked.
			if b = p.rx.next(); b != nil {
				copy(b.Data(), scratch[:n])
			}
		}
		switch {
		case n > p.maxFrame:
			p.rxErrors.Add(1)
		case b == nil:
			p.rxNoBuffer.Add(1)
		default:
			b.SetLen(n)
			p.rx.filled()
			p.rxPackets.Add(1)
			p.rxBytes.Add(uint64(n))
			p.fire()
		}
	}
}

// writeLoop is the writer goroutine: it writes every TX ring's frames to the kernel and,
// once all are empty, waits for TxBurst's wake-up (no polling) or Close.
func (p *Port) writeLoop() {
	defer close(p.writerDone)
	for {
		wrote := false
		for _, r := range p.tx {
			for f := r.front(); f != nil; f = r.front() {
				if _, err := p.f.Write(f); err != nil {
					if p.closed.Load() {
						return
					}
					p.txWrite.Add(1)
				} else {
					p.txPackets.Add(1)
					p.txBytes.Add(uint64(len(f)))
				}
				r.pop()
				wrote = true
			}
			select {
			case <-p.stop:
				return
			default:
			}
		}
		if wrote {
			continue
		}
		// TxBurst publishes, then loads sleeping; this stores sleeping, then looks at the
		// rings: either it sees the frames or TxBurst sees it asleep and sends the token.
		p.sleeping.Store(true)
		if p.txPending() {
			p.sleeping.Store(false)
			continue
		}
		select {
		case <-p.wake:
		case <-p.stop:
			return
		}
	}
}

// txPending reports whether any TX ring holds frames.
func (p *Port) txPending() bool {
	for _, r := range p.tx {
		if r.pending() {
			return true
		}
	}
	return false
}
