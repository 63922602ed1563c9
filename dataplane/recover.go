package dataplane

import (
	"sync"
	"time"

	"github.com/uiod/uiod/nic"
	"go.uber.org/zap"
)

// recovery runs the Recover of every port that asks for one (nic.Recoverer: virtio's
// DEVICE_NEEDS_RESET, an igbvf port's PF events) inside Exclusive, so that no poll thread
// is in the port while its device is re-initialised, and retries a failed one after the
// port's backoff. The drivers put no fence of their own on their bursts: the dataplane is
// the one owner of who is inside a port (docs/design.md §15). One goroutine serves every
// such port, from Start to Stop; requests before Start wait for it.
type recovery struct {
	ports []recoverPort
	wake  chan struct{}
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// recoverPort is one port whose Recover the dataplane runs.
type recoverPort struct {
	name    string
	rc      *nic.Recovery
	failing bool // the last Recover failed (logged once it succeeds again)
}

// newRecovery registers with every port of ports that is a nic.Recoverer.
func newRecovery(ports []Port) *recovery {
	r := &recovery{wake: make(chan struct{}, 1), stop: make(chan struct{})}
	for _, p := range ports {
		for _, np := range []nic.Port{p.NIC, p.Kernel} {
			if np == nil {
				continue
			}
			if rc := nic.NewRecovery(np, r.kick); rc != nil {
				r.ports = append(r.ports, recoverPort{name: p.Name, rc: rc})
			}
		}
	}
	return r
}

// kick is the ports' call when one asks for Recover: it never blocks.
func (r *recovery) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// startRecovery starts the goroutine if a port can ask for Recover.
func (dp *Dataplane) startRecovery() {
	r := dp.recovery
	if len(r.ports) == 0 {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		dp.runRecovery(r)
	}()
}

// stopRecovery ends the goroutine and waits for a Recover under way. It runs before Stop
// takes dp.mu, which Exclusive needs.
func (dp *Dataplane) stopRecovery() {
	r := dp.recovery
	r.once.Do(func() { close(r.stop) })
	r.wg.Wait()
}

// runRecovery serves the ports' requests and retries until stop.
func (dp *Dataplane) runRecovery(r *recovery) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		var next time.Time
		for i := range r.ports {
			p := &r.ports[i]
			if p.rc.Due(now) {
				dp.recoverPort(p)
			}
			if at := p.rc.RetryAt(); !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		var retry <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			retry = timer.C
		}
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case <-retry:
		}
		timer.Stop()
	}
}

// recoverPort runs p's Recover with every poll thread parked between two turns.
func (dp *Dataplane) recoverPort(p *recoverPort) {
	err := p.rc.Run(dp.Exclusive)
	runs, fails := p.rc.Counts()
	switch {
	case err != nil:
		dp.log.Warn("port recovery failed; retrying", zap.String("port", p.name), zap.Error(err),
			zap.Duration("retry_in", time.Until(p.rc.RetryAt()).Round(time.Millisecond)), zap.Uint64("failures", fails))
		p.failing = true
	case p.failing:
		dp.log.Info("port recovered", zap.String("port", p.name), zap.Uint64("attempts", runs), zap.Uint64("failures", fails))
		p.failing = false
	}
}
