package irq

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
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

// String names the state as status pages show it.
func (s State) String() string {
	switch s {
	case Polling:
		return "polling"
	case Armed:
		return "armed"
	case Asleep:
		return "asleep"
	case Yielding:
		return "yielding"
	}
	return fmt.Sprintf("irq.State(%d)", int32(s))
}

// IdleStats are an Idler's counters since it was created.
type IdleStats struct {
	Arms          uint64 // times the queues' interrupts were armed
	ArmRaces      uint64 // re-polls right after arming that found frames (race caught)
	Sleeps        uint64 // epoll waits (Adaptive) and range sleeps (SleepRange)
	WakeInterrupt uint64 // waits ended by an interrupt
	WakeTimeout   uint64 // waits ended by WaitTimeout
	WakeStop      uint64 // waits ended by Stop
	WakeSpurious  uint64 // interrupt wake-ups whose next poll found nothing
	// WakePredicted counts Auto's timer wake-ups ahead of a predicted periodic frame, and
	// PredictHits those after which the frame was caught by polling within the expected
	// window (the rest came early, by interrupt, or late, after the thread slept again).
	WakePredicted uint64
	PredictHits   uint64
	Asleep        time.Duration // total time in waits and range sleeps
	Yields        uint64        // housekeeping yields
	YieldTime     time.Duration // total time given away by housekeeping yields
	Errors        uint64        // failed waits and drains
	// Threshold is the idle threshold in force: the configured one, or Auto's current
	// decision (0 = sleep at the first empty poll).
	Threshold time.Duration
	// GapEstimate and WakeCost are Auto's running estimates of the inter-arrival gap
	// and of one arm-sleep-wake cycle's cost (zero without Auto).
	GapEstimate time.Duration
	WakeCost    time.Duration
	// Period is the gap Auto predicts periodic traffic by (0: not predicting), and Lead
	// how long before a predicted frame its timer wakes the thread.
	Period time.Duration
	Lead   time.Duration
}

type idleCounters struct {
	arms, armRaces, sleeps                             atomic.Uint64
	wakeInterrupt, wakeTimeout, wakeStop, wakeSpurious atomic.Uint64
	wakePredicted, predictHits                         atomic.Uint64
	asleepNs, yields, yieldNs, errors                  atomic.Uint64
	thresholdNs, gapNs, costNs, periodNs, leadNs       atomic.Int64
}

// Idler runs one polling thread's idle policy. The thread calls Traffic after every poll
// that found frames and Empty after every poll that found none; both run the policy (and
// housekeeping) and may block. Only Stop, Stats and State may be called from other
// goroutines. The hot path (Traffic, Empty without sleeping) allocates nothing and makes
// no system call.
//
// Adaptive (DESIGN §3): once IdleThreshold passed since the last frame, Empty arms the
// queues, drains the vectors, polls once more (a frame that arrived before the interrupt
// was armed would otherwise wait for the timeout), and only if that poll is empty blocks
// in epoll on the vectors and the Stop descriptor, on the calling thread, for at most
// WaitTimeout; then it disarms and returns to polling (the next arm drains the vectors).
// A wake-up by timeout does not restart the threshold, so an idle thread sleeps again
// after one poll. While the ports stay silent, each sleep that times out doubles the bound
// of the next one, up to IdleWaitBackoff × WaitTimeout (at most MaxWaitTimeout); a frame
// or an interrupt restores WaitTimeout. An idle thread so wakes about 6 times a second
// instead of 100 (default 10 ms), while the first sleep after traffic stays short: the
// timeout only matters if an interrupt were lost.
//
// Housekeeping: a yield is due 1/HousekeepingHz after the previous one started; it is taken
// at the first empty poll from then on and, under unbroken traffic, at the latest a quarter
// period later (the deadline). A sleep of at least HousekeepingLength counts as a yield.
type Idler struct {
	cfg  PolicyConfig
	q    Queues
	obs  SleepObserver
	p    *Poller
	c    idleCounters
	st   atomic.Int32
	auto autoThreshold

	threshold int64         // ns
	wait      time.Duration // bound of the next sleep: WaitTimeout, doubled while idle
	last      int64         // time of the last poll that found frames
	woke      bool          // last wait ended by an interrupt and no poll ran since

	// Auto's prediction of periodic traffic.
	watchUntil   int64 // after a predicted wake-up: poll, do not sleep, until then (0: not watching)
	predictedFor int64 // the last frame's time a timer wake-up was already set for
	rng          uint64

	hkPeriod, hkLength int64
	hkDue, hkDeadline  int64
	hkSlept            int64 // sleep time since the last yield

	// Threaded delivery.
	tokens     chan struct{}
	quit       chan struct{}
	helperDone chan struct{}
	timer      *time.Timer

	stopOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

// NewIdler returns the idle policy for one polling thread over q, whose RX interrupts are
// vectors (nil entries and duplicates are fine). Adaptive needs at least one vector.
func NewIdler(cfg PolicyConfig, vectors []*Vector, q Queues) (*Idler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	d := &Idler{cfg: cfg, q: q, threshold: int64(cfg.IdleThreshold), wait: cfg.WaitTimeout, last: Now()}
	d.obs, _ = q.(SleepObserver)
	d.rng = uint64(time.Now().UnixNano()) | 1
	var watch []*Vector
	mode := cfg.WaitMode
	if cfg.Mode == Adaptive {
		for _, v := range vectors {
			if v != nil {
				watch = append(watch, v)
			}
		}
		if len(watch) == 0 {
			return nil, errors.New("adaptive policy: no RX interrupt vector to sleep on")
		}
		if cfg.Delivery == Threaded {
			mode = WaitBlocking
		}
	}
	p, err := NewPoller(mode, watch...)
	if err != nil {
		return nil, err
	}
	d.p = p
	if cfg.Auto {
		d.auto.init(int64(cfg.IdleThreshold))
	}
	d.c.thresholdNs.Store(d.threshold)
	if cfg.HousekeepingHz > 0 {
		d.hkPeriod = int64(time.Second) / int64(cfg.HousekeepingHz)
		d.hkLength = int64(cfg.HousekeepingLength)
		d.scheduleYield(Now())
	}
	if cfg.Mode == Adaptive && cfg.Delivery == Threaded {
		d.tokens = make(chan struct{}, 1)
		d.quit = make(chan struct{})
		d.helperDone = make(chan struct{})
		d.timer = time.NewTimer(time.Hour)
		d.timer.Stop()
		go d.deliver()
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
	if d.hkPeriod > 0 && now >= d.hkDeadline {
		d.yield(now)
	}
}

// Empty tells the policy that a poll at time now found nothing, and runs it.
func (d *Idler) Empty(now int64) {
	if d.woke {
		d.woke = false
		d.c.wakeSpurious.Add(1)
	}
	switch d.cfg.Mode {
	case SleepRange:
		d.sleepRange()
		now = Now()
	case Adaptive:
		if d.watchUntil != 0 {
			if now < d.watchUntil {
				break // woken ahead of a predicted frame: poll for it
			}
			d.watchUntil = 0
		}
		if now-d.last >= d.threshold {
			d.sleep(now)
			now = Now()
		}
	}
	if d.hkPeriod > 0 && now >= d.hkDue {
		d.yield(now)
	}
}

func (d *Idler) setThreshold(t int64) {
	if t != d.threshold {
		d.threshold = t
		d.c.thresholdNs.Store(t)
	}
}

// sleep is Adaptive's arm, drain, re-poll, wait, disarm.
func (d *Idler) sleep(now int64) {
	// Auto on periodic traffic: a timer wakes the thread ahead of the next frame, once
	// per frame; if the frame has not come by watchEnd, the thread sleeps on its
	// interrupt alone. Inline delivery only: the Go timers behind Threaded delivery are
	// not precise below a millisecond.
	var deadline int64
	if d.cfg.Auto && d.tokens == nil && d.predictedFor != d.last && d.p.Precise() {
		if at := d.auto.wakeAt(); at > 0 && at-now <= int64(d.wait) {
			d.predictedFor = d.last
			if at <= now {
				// Due already: poll for it rather than sleep.
				d.watchUntil = d.auto.watchEnd()
				return
			}
			deadline = at
		}
	}
	d.st.Store(int32(Armed))
	d.q.Arm()
	d.c.arms.Add(1)
	if d.tokens != nil {
		select { // a stale hand-off from before the arm
		case <-d.tokens:
		default:
		}
	} else if _, err := d.p.Drain(); err != nil {
		d.c.errors.Add(1)
	}
	if n := d.q.Poll(); n > 0 {
		d.q.Disarm()
		d.c.armRaces.Add(1)
		d.st.Store(int32(Polling))
		d.Traffic(Now())
		return
	}
	if d.obs != nil {
		d.obs.BeforeSleep()
	}
	d.st.Store(int32(Asleep))
	t0 := Now()
	var w Wake
	if d.tokens != nil {
		w = d.waitHandOff()
	} else {
		wait := d.wait
		if deadline != 0 {
			wait = time.Duration(max(deadline-t0, 0))
		}
		var err error
		if w, err = d.p.Wait(wait); err != nil {
			d.c.errors.Add(1)
		}
	}
	t1 := Now()
	// The vectors are not drained here: nothing waits on them before the next arm,
	// which drains them anyway, and a read would delay the frame that woke us by a
	// system call.
	d.q.Disarm()
	d.st.Store(int32(Polling))
	d.c.sleeps.Add(1)
	d.c.asleepNs.Add(uint64(t1 - t0))
	switch w {
	case WakeInterrupt:
		d.c.wakeInterrupt.Add(1)
		if deadline != 0 {
			d.auto.early(t1) // the frame beat the timer
		}
		d.woke = true
		d.wait = d.cfg.WaitTimeout
	case WakeTimeout:
		if deadline != 0 {
			d.c.wakePredicted.Add(1)
			d.auto.woke(t1 - deadline)
			d.watchUntil = d.auto.watchEnd()
			break
		}
		d.c.wakeTimeout.Add(1)
		d.wait = nextIdleWait(d.wait, d.cfg.WaitTimeout)
	case WakeStop:
		d.c.wakeStop.Add(1)
	}
	if d.cfg.Auto {
		// The cycle's own cost: arming and re-polling before the wait, draining and
		// disarming after it, plus the kernel's wake-up (wakeFloor).
		d.auto.cycle((t0 - now) + (Now() - t1))
		d.c.gapNs.Store(d.auto.gap)
		d.c.costNs.Store(d.auto.cost)
		d.c.periodNs.Store(d.auto.period)
		d.c.leadNs.Store(d.auto.lead)
		d.setThreshold(d.auto.threshold())
	}
	d.slept(t1 - t0)
}

// waitHandOff blocks on the threaded-delivery helper's hand-off.
func (d *Idler) waitHandOff() Wake {
	d.timer.Reset(d.wait)
	var w Wake
	select {
	case <-d.tokens:
		w = WakeInterrupt
	case <-d.timer.C:
		w = WakeTimeout
	case <-d.quit:
		w = WakeStop
	}
	d.timer.Stop()
	return w
}

// deliver is the threaded-delivery helper: it blocks in epoll (handing its P away) and
// passes every interrupt to the polling thread over d.tokens.
func (d *Idler) deliver() {
	defer close(d.helperDone)
	for {
		w, err := d.p.Wait(-1)
		if err != nil {
			d.c.errors.Add(1)
			return
		}
		if w == WakeStop {
			return
		}
		if _, err := d.p.Drain(); err != nil {
			d.c.errors.Add(1)
		}
		select {
		case d.tokens <- struct{}{}:
		default: // one pending hand-off is enough
		}
	}
}

// sleepRange sleeps a random time in [SleepMin, SleepMax].
func (d *Idler) sleepRange() {
	ns := d.randSleep()
	d.st.Store(int32(Yielding))
	t0 := Now()
	ts := unix.NsecToTimespec(ns)
	var rem unix.Timespec
	for nanosleepRaw(&ts, &rem) == unix.EINTR {
		ts = rem
	}
	t := Now() - t0
	d.st.Store(int32(Polling))
	d.c.sleeps.Add(1)
	d.c.asleepNs.Add(uint64(t))
	d.slept(t)
}

// randSleep draws a duration in [SleepMin, SleepMax] ns with xorshift64*.
func (d *Idler) randSleep() int64 {
	d.rng ^= d.rng >> 12
	d.rng ^= d.rng << 25
	d.rng ^= d.rng >> 27
	r := d.rng * 2685821657736338717
	span := uint64(d.cfg.SleepMax-d.cfg.SleepMin) + 1
	return int64(d.cfg.SleepMin) + int64(r%span)
}

// slept credits a sleep to housekeeping: the CPU was given away anyway.
func (d *Idler) slept(ns int64) {
	if d.hkPeriod == 0 {
		return
	}
	d.hkSlept += ns
	if d.hkSlept >= d.hkLength {
		d.scheduleYield(Now())
	}
}

func (d *Idler) scheduleYield(from int64) {
	d.hkSlept = 0
	d.hkDue = from + d.hkPeriod
	d.hkDeadline = d.hkDue + d.hkPeriod/4
}

// yield gives the CPU away for HousekeepingLength. It uses the ordinary nanosleep, which
// lets the runtime hand this thread's P to other goroutines meanwhile.
func (d *Idler) yield(now int64) {
	d.st.Store(int32(Yielding))
	ts := unix.NsecToTimespec(d.hkLength)
	unix.Nanosleep(&ts, nil) // an early return (EINTR) is fine
	end := Now()
	d.st.Store(int32(Polling))
	d.c.yields.Add(1)
	d.c.yieldNs.Add(uint64(end - now))
	d.scheduleYield(now)
}

// Stop wakes the thread if it sleeps and makes every later wait return at once. The
// thread's loop must check its own stop condition. Safe from any goroutine, repeatedly.
func (d *Idler) Stop() {
	d.stopOnce.Do(func() {
		if d.quit != nil {
			close(d.quit)
		}
	})
	if err := d.p.Stop(); err != nil {
		d.c.errors.Add(1)
	}
}

// Close stops the Idler and releases its descriptors. The polling thread must have left
// Traffic and Empty for good.
func (d *Idler) Close() error {
	d.closeOnce.Do(func() {
		d.Stop()
		if d.helperDone != nil {
			<-d.helperDone
		}
		d.closeErr = d.p.Close()
	})
	return d.closeErr
}

// Stats returns the counters. Safe from any goroutine.
func (d *Idler) Stats() IdleStats {
	c := &d.c
	return IdleStats{
		Arms:          c.arms.Load(),
		ArmRaces:      c.armRaces.Load(),
		Sleeps:        c.sleeps.Load(),
		WakeInterrupt: c.wakeInterrupt.Load(),
		WakeTimeout:   c.wakeTimeout.Load(),
		WakeStop:      c.wakeStop.Load(),
		WakeSpurious:  c.wakeSpurious.Load(),
		WakePredicted: c.wakePredicted.Load(),
		PredictHits:   c.predictHits.Load(),
		Asleep:        time.Duration(c.asleepNs.Load()),
		Yields:        c.yields.Load(),
		YieldTime:     time.Duration(c.yieldNs.Load()),
		Errors:        c.errors.Load(),
		Threshold:     time.Duration(c.thresholdNs.Load()),
		GapEstimate:   time.Duration(c.gapNs.Load()),
		WakeCost:      time.Duration(c.costNs.Load()),
		Period:        time.Duration(c.periodNs.Load()),
		Lead:          time.Duration(c.leadNs.Load()),
	}
}

// IdleWaitBackoff is how far Adaptive stretches the bound of its sleeps while the ports
// stay silent: up to this many times WaitTimeout.
const IdleWaitBackoff = 16

// nextIdleWait is the bound of the sleep after one that timed out with bound cur.
func nextIdleWait(cur, base time.Duration) time.Duration {
	limit := min(IdleWaitBackoff*base, MaxWaitTimeout)
	return max(min(2*cur, limit), base)
}
