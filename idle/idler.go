// Package idle decides what a polling thread does when its queues are empty: keep
// polling (Busy), sleep a random short time (SleepRange), or arm the queues' RX
// interrupts and sleep in epoll until one fires (Adaptive, with a fixed or an estimated
// idle threshold), plus periodic housekeeping yields under any policy and, on a loop that
// turns it on, the runtime yield to the Go scheduler (RuntimeYieldEvery). It sits above irq,
// whose vectors and Poller it sleeps on, and below the dataplane, whose loops drive it.
// ParseSpec reads the policy mini-language of the command line (busy, adaptive:300us,
// auto, sleep:20us-50us, …+hk:100/10us).
package idle

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/irq"
)

// Queues is a polling thread's set of queues as an Idler drives them.
type Queues interface {
	// Poll runs one receive burst over every queue, processes what it received and
	// returns the number of frames.
	Poll() int
	// Arm enables the RX interrupt of every queue.
	Arm()
	// Disarm disables the RX interrupt of every queue.
	Disarm()
}

// SleepObserver may be implemented by a Queues to learn that its thread is about to
// block: BeforeSleep runs on the polling thread after the queues were armed, the vectors
// drained and the re-poll found nothing, immediately before the wait. Tests use it to put
// a frame into exactly that window.
type SleepObserver interface {
	BeforeSleep()
}

// State is what a polling thread is doing, for status pages and tests.
type State int32

// States of a polling thread.
const (
	Polling  State = iota // polling its queues
	Armed                 // interrupts armed, re-polling or about to sleep
	Asleep                // blocked waiting for an interrupt, a timeout or Stop
	Yielding              // sleeping in a range sleep or a housekeeping yield
)

var stateNames = names[State]{"idle.State", []string{Polling: "polling", Armed: "armed", Asleep: "asleep", Yielding: "yielding"}}

// String names the state as status pages show it.
func (s State) String() string { return stateNames.name(s) }

// Idler runs one polling thread's idle policy. The thread calls Traffic after every poll
// that found frames and Empty after every poll that found none, passing the time of the
// poll (Now); both run the policy (and housekeeping) and may block. The Idler reads the
// clock itself only around the calls that block. Only Stop, Stats and State may be
// called from other goroutines. The hot path (Traffic, Empty without sleeping) allocates
// nothing and makes no system call.
//
// Adaptive, once IdleThreshold passed since the last frame (at the first empty poll for
// a zero threshold), sleeps as docs/design.md §3 lays out (see adaptive.go): arm the queues, drain
// the vectors, poll once more (a frame that arrived before the interrupt was armed would
// otherwise wait for the timeout), and only if that poll is empty block in epoll on the
// vectors and the Stop descriptor, on the calling thread, for at most WaitTimeout; then
// disarm and return to polling (the next arm drains the vectors). A wake-up by timeout
// does not restart the threshold, so an idle thread sleeps again after one poll. While
// the ports stay silent, each sleep that times out doubles the bound of the next one, up
// to WaitBackoff × WaitTimeout (at most MaxWaitTimeout); a frame or an interrupt restores
// WaitTimeout. A raw sleeper (irq.WaitRaw) silent for DeepIdleAfter waits blocking, for up
// to MaxWaitTimeout, until the next frame or interrupt (deep idle, see waitPlan).
//
// The runtime yield (runtimeyield.go), when the thread's loop turned it on, is the
// Idler's decision too: Empty returns true once the thread has polled for
// RuntimeYieldEvery without a rest, and the loop yields to the Go scheduler.
//
// Housekeeping (see housekeeping.go): a yield is due 1/HousekeepingHz after the previous
// one started; it is taken at the first empty poll from then on and, under unbroken
// traffic, at the latest a quarter period later (the deadline). A sleep of at least
// HousekeepingLength counts as a yield.
type Idler struct {
	cfg  PolicyConfig
	q    Queues
	obs  SleepObserver
	p    *irq.Poller
	c    counters
	st   atomic.Int32
	auto autoThreshold

	threshold  int64         // ns
	wait       time.Duration // bound of the next sleep: WaitTimeout, doubled while idle
	last       int64         // time of the last poll that found frames
	woke       bool          // last wait ended by an interrupt and no poll ran since
	quiet      int64         // time of the last frame or interrupt (see waitPlan)
	turnEnd    int64         // when the previous turn's policy work ended (0: no turn yet), for Stalls
	restEnd    int64         // when the thread last rested (0: never), RestEnd
	yieldAfter int64         // the runtime yield's interval (math.MaxInt64: off), SetRuntimeYield
	run        int           // the run of untold empty polls the last Empty allowed (skip.go)
	spare      int           // what is left of it
	pinRun     int           // PinSkipRun's run, 0: sized by time

	// Auto's prediction of periodic traffic.
	watchUntil   int64 // after a predicted wake-up: poll, do not sleep, until then (0: not watching)
	predictedFor int64 // the last frame's time a timer wake-up was already set for

	rng uint64 // SleepRange's generator state

	hk housekeeping
	th *threaded // nil with Inline delivery

	closeOnce sync.Once
	closeErr  error
}

// New returns the idle policy for one polling thread over q, whose RX interrupts are
// vectors (nil entries and duplicates are fine). A policy that sleeps on interrupts
// (SleepsOnInterrupt) needs at least one vector: without, New fails with ErrNoVector.
func New(cfg PolicyConfig, vectors []*irq.Vector, q Queues) (*Idler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	now := Now()
	d := &Idler{cfg: cfg, q: q, threshold: int64(cfg.IdleThreshold), wait: cfg.WaitTimeout, last: now, quiet: now, yieldAfter: math.MaxInt64}
	d.obs, _ = q.(SleepObserver)
	d.rng = uint64(now) | 1
	var watch []*irq.Vector
	mode := cfg.WaitMode
	if cfg.SleepsOnInterrupt() {
		for _, v := range vectors {
			if v != nil {
				watch = append(watch, v)
			}
		}
		if len(watch) == 0 {
			return nil, ErrNoVector
		}
		if cfg.Delivery == Threaded {
			mode = irq.WaitBlocking
		}
	}
	p, err := irq.NewPoller(mode, watch...)
	if err != nil {
		return nil, err
	}
	d.p = p
	if cfg.Auto {
		d.auto.init(int64(cfg.IdleThreshold))
	}
	d.c.thresholdNs.Store(d.threshold)
	d.hk.init(cfg, now)
	if cfg.SleepsOnInterrupt() && cfg.Delivery == Threaded {
		d.th = startThreaded(p, &d.c)
	}
	return d, nil
}

// Config is the policy configuration in force (with defaults filled in).
func (d *Idler) Config() PolicyConfig { return d.cfg }

// State is what the thread is doing now.
func (d *Idler) State() State { return State(d.st.Load()) }

// Traffic tells the policy that a poll at time now (see Now) found frames.
func (d *Idler) Traffic(now int64) {
	woke := d.woke
	d.woke = false
	d.wait = d.cfg.WaitTimeout
	d.quiet = now
	if d.cfg.Auto {
		if d.watchUntil != 0 {
			d.c.predictHits.Add(1)
			d.auto.caught()
			d.watchUntil = 0
		}
		if woke {
			// Caught right after an interrupt woke the thread: it came about one
			// wake-up earlier.
			d.auto.frame(now - d.auto.late)
		} else {
			d.auto.frame(now)
		}
		d.setThreshold(d.auto.threshold())
	}
	d.last = now
	d.run, d.spare = 0, 0 // the next empty poll is told: a threshold of 0 sleeps there
	if d.hk.overdue(now) {
		now = d.yield(now)
	}
	d.turnEnd = now
}

// Empty tells the policy that a poll at time now (see Now) found nothing, and runs it.
// It returns true when the thread is to yield to the Go scheduler now (the runtime
// yield, SetRuntimeYield): the caller yields, without frames in hand, and then calls
// Rested.
func (d *Idler) Empty(now int64) bool {
	begin, g := now, d.checkStall(now)
	if d.woke {
		d.woke = false
		d.c.wakeSpurious.Add(1)
	}
	switch d.cfg.Mode {
	case SleepRange:
		now = d.sleepRange()
	case Adaptive:
		if d.watchUntil != 0 {
			if now < d.watchUntil {
				break // woken ahead of a predicted frame: poll for it
			}
			d.watchUntil = 0
		}
		if now-d.last >= d.threshold {
			now = d.sleep(now)
		}
	}
	if d.hk.due(now) {
		now = d.yield(now)
	}
	d.plan(begin, now, g)
	d.turnEnd = now
	return now-d.restEnd >= d.yieldAfter
}

func (d *Idler) setThreshold(t int64) {
	if t != d.threshold {
		d.threshold = t
		d.c.thresholdNs.Store(t)
	}
}

// Stop wakes the thread if it sleeps and makes every later wait return at once. The
// thread's loop must check its own stop condition. Safe from any goroutine, repeatedly.
func (d *Idler) Stop() {
	if d.th != nil {
		d.th.stop()
	}
	if err := d.p.Stop(); err != nil {
		d.c.errors.Add(1)
	}
}

// Close stops the Idler and releases its descriptors. The polling thread must have left
// Traffic and Empty for good.
func (d *Idler) Close() error {
	d.closeOnce.Do(func() {
		d.Stop()
		if d.th != nil {
			d.th.join()
		}
		d.closeErr = d.p.Close()
	})
	return d.closeErr
}
