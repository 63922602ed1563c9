// Package wire carries Ethernet frames between a NIC (the device model, or a real NIC's
// peer) and whatever is on the other end of its cable: another port, a packet generator, a
// QEMU guest, a TAP interface. Frames are stamped on the wire's clock when they arrive, like
// hardware timestamps taken at the PHY, so latencies measured across a wire are exact.
package wire

import (
	"errors"
	"sync"
	"time"
)

var epoch = time.Now()

// Now is the wire clock: monotonic nanoseconds since the process started. It costs what
// time.Now costs (no system call).
func Now() int64 { return int64(time.Since(epoch)) }

// Handler receives one frame. frame is valid only during the call (copy what you keep);
// ts is the wire time at which the frame arrived.
type Handler func(frame []byte, ts int64)

// Port is one end of a wire.
type Port interface {
	// Send transmits one frame to the peer. The frame is copied or fully consumed before
	// Send returns. It returns ErrClosed after Close.
	Send(frame []byte) error
	// SetHandler installs the receiver for frames from the peer (nil drops them). Frames
	// are delivered one at a time; which goroutine calls h depends on the transport (the
	// sender's own, for in-memory pairs).
	SetHandler(h Handler)
	// Close stops delivery in both directions. Safe to call more than once.
	Close() error
}

// ErrClosed is returned by Send on a closed wire.
var ErrClosed = errors.New("wire closed")

// Pair returns the two ends of an in-memory wire. A frame sent on one end is handed to the
// other end's handler synchronously, on the sending goroutine, stamped with Now.
func Pair() (Port, Port) {
	a, b := &memPort{}, &memPort{}
	a.peer, b.peer = b, a
	return a, b
}

type memPort struct {
	mu       sync.RWMutex
	h        Handler
	closed   bool
	peer     *memPort
	inflight sync.WaitGroup // calls of h under way; Close waits for them
}

func (p *memPort) Send(frame []byte) error {
	p.mu.RLock()
	closed := p.closed
	p.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	q := p.peer
	q.mu.RLock()
	h, qclosed := q.h, q.closed
	if h != nil && !qclosed {
		q.inflight.Add(1) // under the lock: Close sets closed before it waits
	}
	q.mu.RUnlock()
	if qclosed {
		return ErrClosed
	}
	if h != nil {
		defer q.inflight.Done()
		h(frame, Now())
	}
	return nil
}

func (p *memPort) SetHandler(h Handler) {
	p.mu.Lock()
	p.h = h
	p.mu.Unlock()
}

// Close stops delivery and waits until no call of the port's handler is under way, so
// that the handler's owner may release what it uses once Close returns. A handler must
// not close its own port.
func (p *memPort) Close() error {
	p.mu.Lock()
	p.closed = true
	p.h = nil
	p.mu.Unlock()
	p.inflight.Wait()
	return nil
}
