package nic

import (
	"sync"
	"time"
)

// Recoverer is a Port whose device can fall into a state the driver leaves only by
// re-initialising the whole device under its queues: virtio's DEVICE_NEEDS_RESET, an
// igbvf port's PF reset. The driver runs no recovery of its own and puts no lock on its
// bursts for one: it asks its user, who runs Recover when no goroutine is inside the
// port's queues (the dataplane does it inside Exclusive, between two turns of every poll
// thread; docs/design.md §15). A burst then costs one plain load of a flag that only
// Recover writes.
type Recoverer interface {
	Port
	// OnRecoverNeeded sets the function the port calls when it needs Recover. The port
	// calls it from its event watcher or from Link, on any goroutine, possibly more than
	// once for one need; f must return at once and must not call the port. If the port
	// needs Recover when f is set, f is called at once. A later call replaces f.
	OnRecoverNeeded(f func())
	// Recover re-initialises the device if it needs it and returns nil at once if not.
	// The caller must make sure that no goroutine is inside RxBurst, TxBurst,
	// EnableRxInterrupt, DisableRxInterrupt, Close or any other call on the port's queues
	// while it runs (Link, Stats, MAC and RxVector may be called meanwhile). On an error
	// the port's queues take and give nothing until a later Recover succeeds: the caller
	// tries again after RecoverBackoff, or earlier when the port asks again.
	Recover() error
	// RecoverBackoff is how long the caller waits after a failed Recover before the next
	// try, and the longest that wait grows to, doubling after each failure.
	RecoverBackoff() (first, max time.Duration)
}

// RecoverSignal is a driver's side of OnRecoverNeeded: it remembers that the port needs
// Recover and tells the function the port's user set. The zero RecoverSignal is ready.
// It is safe for concurrent use.
type RecoverSignal struct {
	mu   sync.Mutex
	f    func()
	need bool
}

// Set implements OnRecoverNeeded: f is called at once if a need is pending.
func (s *RecoverSignal) Set(f func()) {
	s.mu.Lock()
	s.f = f
	need := s.need
	s.mu.Unlock()
	if need && f != nil {
		f()
	}
}

// Raise records that the port needs Recover and tells the user's function.
func (s *RecoverSignal) Raise() {
	s.mu.Lock()
	s.need = true
	f := s.f
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// Clear records that Recover succeeded: no need is pending.
func (s *RecoverSignal) Clear() {
	s.mu.Lock()
	s.need = false
	s.mu.Unlock()
}

// Pending reports whether a need is pending (raised and not cleared).
func (s *RecoverSignal) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.need
}

// Recovery is the user's side of a Recoverer: it takes the port's requests and keeps the
// schedule of retries after a failed Recover. The dataplane keeps one per port and runs
// it through Exclusive; a caller that drives a port's queues itself, on one goroutine,
// calls Poll between its bursts. Wake may be used from any goroutine; the other methods
// from one at a time.
type Recovery struct {
	port    Recoverer
	notify  func()
	wake    chan struct{}
	retryAt time.Time     // when a failed Recover is tried again; zero: none failed
	wait    time.Duration // the backoff that set retryAt
	runs    uint64
	fails   uint64
	err     error
}

// NewRecovery returns the Recovery of p and registers it with the port
// (OnRecoverNeeded), or nil if p is no Recoverer. notify, if not nil, is called after
// each request of the port (on the port's goroutine: it must return at once), for a
// caller that serves several ports from one goroutine.
func NewRecovery(p Port, notify func()) *Recovery {
	r, ok := p.(Recoverer)
	if !ok {
		return nil
	}
	rc := &Recovery{port: r, notify: notify, wake: make(chan struct{}, 1)}
	r.OnRecoverNeeded(rc.request)
	return rc
}

// request is the port's call: it never blocks.
func (r *Recovery) request() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
	if r.notify != nil {
		r.notify()
	}
}

// Wake is readable when the port asked for Recover since the last Due.
func (r *Recovery) Wake() <-chan struct{} { return r.wake }

// RetryAt is when a failed Recover is due to be tried again, zero when the last one did
// not fail.
func (r *Recovery) RetryAt() time.Time { return r.retryAt }

// Due reports whether Recover should run now: the port asked for it (the request is taken)
// or a retry is due.
func (r *Recovery) Due(now time.Time) bool {
	select {
	case <-r.wake:
		return true
	default:
	}
	return !r.retryAt.IsZero() && !now.Before(r.retryAt)
}

// Run runs the port's Recover through exclusive, which must call its function while no
// goroutine is inside the port's queues (dataplane.Exclusive; nil: the caller is their
// only user and runs it itself), and schedules the next try if it fails. It returns
// Recover's error, or exclusive's if that could not run it.
func (r *Recovery) Run(exclusive func(fn func()) error) error {
	var err error
	fn := func() { err = r.port.Recover() }
	if exclusive == nil {
		fn()
	} else if xerr := exclusive(fn); xerr != nil {
		err = xerr
	}
	r.runs++
	r.err = err
	if err == nil {
		r.retryAt, r.wait = time.Time{}, 0
		return nil
	}
	r.fails++
	first, most := r.port.RecoverBackoff()
	if r.wait == 0 {
		r.wait = first
	} else {
		r.wait = min(2*r.wait, most)
	}
	r.retryAt = time.Now().Add(r.wait)
	return err
}

// Poll runs Recover (as Run, with exclusive) if it is Due, for a caller between its
// bursts. It reports whether it ran and Recover's error. A nil Recovery does nothing.
func (r *Recovery) Poll(exclusive func(fn func()) error) (ran bool, err error) {
	if r == nil || !r.Due(time.Now()) {
		return false, nil
	}
	return true, r.Run(exclusive)
}

// Counts are how many times Run ran Recover and how many of those failed.
func (r *Recovery) Counts() (runs, failures uint64) { return r.runs, r.fails }

// Err is the error of the last Run, nil if it succeeded or none ran.
func (r *Recovery) Err() error { return r.err }
