// Package dataplane runs the poll loops: one goroutine per configured thread, locked to
// its OS thread (and pinned to a CPU when configured), polling several RX queues of
// several ports, handing each RX burst to an App (l2fwd, reflect or the caller's own) that
// decides where every frame goes, and, when traffic stops,
// letting the thread's idle.Idler put it to sleep until an RX interrupt.
//
// The process should run with GOMAXPROCS = ProcsFor(number of threads): busy and
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
	// mirrors are the ports' capture points by PortID; noMirror is the one of the kernel
	// paths, which nothing attaches to.
	mirrors  []mirrorSlot
	noMirror mirrorSlot
	rxWaits  []*rxWait // ports with a 1588 unit (rxwait.go)
	recovery *recovery // the ports that ask for Recover (recover.go)
	wg       sync.WaitGroup

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
	every, err := idle.RuntimeYieldFromEnv()
	if err != nil {
		return nil, err
	}
	dp := &Dataplane{cfg: cfg, log: cfg.Logger, mirrors: make([]mirrorSlot, len(cfg.Ports))}
	pollCPUs := make([]int, len(cfg.Threads))
	for ti, th := range cfg.Threads {
		pollCPUs[ti] = th.CPU
	}
	for ti, th := range cfg.Threads {
		l := dp.newLoop(ti, th)
		l.th.keepOff(pollCPUs)
		l.yield.every = every
		var vectors []*irq.Vector
		for _, q := range th.Queues {
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
	dp.recovery = newRecovery(dp.cfg.Ports)
	return dp, nil
}

// newLoop lays out thread ti: its queues, its TX slots (one per TX queue it sends on: its
// queues' own first, then th.Tx) and the PortID → slot tables its Bursts use.
func (dp *Dataplane) newLoop(ti int, th Thread) *loop {
	cfg := &dp.cfg
	l := &loop{
		index: ti,
		cpu:   th.CPU,
		app:   cfg.App,
		bufs:  make([]*nic.Buf, cfg.Batch),
		stop:  &dp.stop,
	}
	nicID := map[nic.Port]PortID{}
	kernelOf := map[nic.Port]PortID{} // kernel path → its port
	for i, p := range cfg.Ports {
		nicID[p.NIC] = PortID(i)
		if p.Kernel != nil {
			kernelOf[p.Kernel] = PortID(i)
		}
	}
	txOf := make([]int16, len(cfg.Ports))     // PortID → first slot on its NIC
	kernelTx := make([]int16, len(cfg.Ports)) // PortID → first slot on its kernel path
	for i := range txOf {
		txOf[i], kernelTx[i] = -1, -1
	}
	slotOf := map[TxQueue]int16{}
	addSlot := func(p nic.Port, q int) int16 {
		if s, ok := slotOf[TxQueue{p, q}]; ok {
			return s
		}
		s := int16(len(l.slots))
		slotOf[TxQueue{p, q}] = s
		ts := txSlot{port: p, q: q, mirror: &dp.noMirror, pend: make([]*nic.Buf, 0, cfg.Batch)}
		if id, ok := nicID[p]; ok {
			ts.mirror = &dp.mirrors[id]
			if txOf[id] < 0 {
				txOf[id] = s
			}
		} else if id, ok := kernelOf[p]; ok {
			ts.kernel = true
			if kernelTx[id] < 0 {
				kernelTx[id] = s
			}
		}
		l.slots = append(l.slots, ts)
		return s
	}
	for _, q := range th.Queues {
		addSlot(q.TxPort, q.TxQ)
	}
	for _, tx := range th.Tx {
		addSlot(tx.Port, tx.Queue)
	}
	l.queues = make([]queue, len(th.Queues))
	l.rx = make([]rxQueue, len(th.Queues))
	for i, q := range th.Queues {
		lq := &l.queues[i]
		l.rx[i] = rxQueue{q.RxPort, q.RxQ}
		lq.name, lq.rxq, lq.peer = q.Name, q.RxQ, nicID[q.TxPort]
		lq.slot, lq.kernel, lq.mirror = slotOf[TxQueue{q.TxPort, q.TxQ}], -1, &dp.noMirror
		if id, ok := nicID[q.RxPort]; ok {
			lq.rxID, lq.kernel, lq.mirror = id, kernelTx[id], &dp.mirrors[id]
			lq.wait = dp.rxWaitOf(q.RxPort, cfg.Ports[id].Name)
		} else {
			lq.rxID, lq.direct = kernelOf[q.RxPort], true
		}
	}
	l.burst = Burst{Thread: ti, verdict: make([]verdict, cfg.Batch), extra: make([]extraFrame, 0, 4*cfg.Batch), txOf: txOf}
	return l
}

// Start starts every thread and returns once each has locked and pinned its OS thread,
// and, if a port can ask for Recover (nic.Recoverer), the goroutine that runs it between
// the threads' turns (recover.go). If a thread cannot be set up, Start stops the others
// and returns the error.
func (dp *Dataplane) Start() error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.started || dp.stopped {
		return errors.New("dataplane: already started")
	}
	dp.started = true
	reserveProcs(len(dp.loops))
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
	dp.startRecovery()
	p := dp.cfg.Policy.WithDefaults()
	dp.log.Info("dataplane started",
		zap.Int("threads", len(dp.loops)),
		zap.String("app", appName(dp.cfg.App)),
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
// closed. Safe to call more than once, and without Start. A port's Recover under way
// (recover.go) finishes first.
func (dp *Dataplane) Stop() {
	dp.stopRecovery()
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
		releaseProcs(len(dp.loops)) // the polling threads are gone
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
