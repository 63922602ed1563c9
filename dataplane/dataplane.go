// Package dataplane runs the poll loops: one goroutine per configured thread, locked to
// its OS thread (and pinned to a CPU when configured), polling several RX queues of
// several ports, handing frames to an app (l2fwd or reflect) and, when traffic stops,
// letting the thread's idle.Idler put it to sleep until an RX interrupt.
//
// The process should run with GOMAXPROCS = irq.ProcsFor(number of threads): busy and
// raw-sleeping poll threads each hold a P.
package dataplane

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"go.uber.org/zap"
)

// Dataplane is a set of polling threads. Create it with New, run it with Start, end it
// with Stop. Stats and Threads may be called from any goroutine at any time.
type Dataplane struct {
	cfg   Config
	log   *zap.Logger
	loops []*loop
	stop  atomic.Bool
	wg    sync.WaitGroup

	mu      sync.Mutex
	started bool
	stopped bool
}

// New checks cfg and prepares the threads (their idle policies and epoll descriptors)
// without starting them. Errors name the configuration field that is wrong.
func New(cfg Config) (*Dataplane, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dp := &Dataplane{cfg: cfg, log: cfg.Logger}
	for ti, th := range cfg.Threads {
		l := &loop{
			index:   ti,
			cpu:     th.CPU,
			reflect: cfg.App == Reflect,
			bufs:    make([]*nic.Buf, cfg.Batch),
			stop:    &dp.stop,
		}
		var vectors []*irq.Vector
		for _, q := range th.Queues {
			l.queues = append(l.queues, queue{name: q.Name, rx: q.RxPort, rxq: q.RxQ, tx: q.TxPort, txq: q.TxQ})
			vectors = append(vectors, q.RxPort.RxVector(q.RxQ))
		}
		idler, err := idle.New(cfg.Policy, vectors, l)
		if err != nil {
			dp.closeIdlers()
			return nil, fmt.Errorf("threads[%d]: %w", ti, err)
		}
		l.setIdler(idler)
		dp.loops = append(dp.loops, l)
	}
	return dp, nil
}

// Start starts every thread and returns once each has locked and pinned its OS thread.
// If one cannot be set up, Start stops the others and returns the error.
func (dp *Dataplane) Start() error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.started || dp.stopped {
		return errors.New("dataplane: already started")
	}
	dp.started = true
	ready := make(chan error, len(dp.loops))
	for _, l := range dp.loops {
		dp.wg.Add(1)
		go func() {
			defer dp.wg.Done()
			l.run(ready)
		}()
	}
	var errs []error
	for range dp.loops {
		if err := <-ready; err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		dp.stopLocked()
		return fmt.Errorf("start dataplane: %w", err)
	}
	p := dp.cfg.Policy.WithDefaults()
	dp.log.Info("dataplane started",
		zap.Int("threads", len(dp.loops)),
		zap.Stringer("app", dp.cfg.App),
		zap.Stringer("policy", p.Mode),
		zap.Duration("idle_threshold", p.IdleThreshold),
		zap.Bool("auto", p.Auto),
		zap.Stringer("delivery", p.Delivery))
	return nil
}

// Stop ends every thread: it sets the stop flag, wakes threads asleep in epoll through
// their Poller's wake descriptor, and returns when every loop has exited and released its
// descriptors. A thread in a range sleep or housekeeping yield finishes it first (at most
// 1 s by validation). After Stop no thread touches a port or buffer; the ports can be
// closed. Safe to call more than once, and without Start.
func (dp *Dataplane) Stop() {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.stopLocked()
}

func (dp *Dataplane) stopLocked() {
	if dp.stopped {
		return
	}
	dp.stopped = true
	dp.stop.Store(true)
	for _, l := range dp.loops {
		l.idlerNow().Stop()
	}
	dp.wg.Wait()
	dp.closeIdlers()
	if dp.started {
		dp.log.Info("dataplane stopped")
	}
}

func (dp *Dataplane) closeIdlers() {
	for _, l := range dp.loops {
		if p := l.swap.pending.Swap(nil); p != nil {
			_ = p.Close() // a SetPolicy the thread never took
		}
		if l.idler != nil {
			if err := l.idler.Close(); err != nil {
				dp.log.Warn("close idle policy", zap.Int("thread", l.index), zap.Error(err))
			}
		}
	}
}

// Stats returns every queue's counters, thread by thread in configuration order.
func (dp *Dataplane) Stats() []QueueStats {
	var out []QueueStats
	for _, l := range dp.loops {
		for i := range l.queues {
			out = append(out, l.queues[i].c.snapshot(l.queues[i].name, l.index))
		}
	}
	return out
}

// Threads returns every thread's CPU time, state and idle-policy counters.
func (dp *Dataplane) Threads() []ThreadStats {
	out := make([]ThreadStats, len(dp.loops))
	for i, l := range dp.loops {
		out[i] = l.stats()
	}
	return out
}
