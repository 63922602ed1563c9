package idle

import (
	"sync/atomic"
	"time"
)

// Stats are an Idler's counters since it was created.
type Stats struct {
	Arms          uint64 // times the queues' interrupts were armed
	ArmRaces      uint64 // re-polls right after arming that found frames (race caught)
	Sleeps        uint64 // epoll waits (Adaptive) and range sleeps (SleepRange)
	WakeInterrupt uint64 // waits ended by an interrupt
	WakeTimeout   uint64 // waits ended by WaitTimeout
	WakeStop      uint64 // waits ended by Stop
	// DeepSleeps counts the waits of a raw sleeper in deep idle, which blocked through
	// the scheduler (irq.WaitBlocking) instead.
	DeepSleeps   uint64
	WakeSpurious uint64 // interrupt wake-ups whose next poll found nothing
	// WakePredicted counts Auto's timer wake-ups ahead of a predicted periodic frame, and
	// PredictHits those after which the frame was caught by polling within the expected
	// window (the rest came early, by interrupt, or late, after the thread slept again).
	WakePredicted uint64
	PredictHits   uint64
	Asleep        time.Duration // total time in waits and range sleeps
	Yields        uint64        // housekeeping yields
	YieldTime     time.Duration // total time given away by housekeeping yields
	Errors        uint64        // failed waits and drains
	// Stalls counts the empty polls that came more than StallThreshold after the thread's
	// previous turn ended, not counting the turns that slept or yielded: time the thread
	// meant to poll and did not (the Go runtime preempting it, another task or the
	// hypervisor taking its CPU). StallTime is their total and MaxStall the longest. The
	// gap is measured between the polls the loop tells (Skip), so it includes the untold
	// run before it (about SkipTarget).
	Stalls    uint64
	StallTime time.Duration
	MaxStall  time.Duration
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

// counters are the Idler's Stats as the polling thread updates them and any goroutine
// reads them.
type counters struct {
	arms, armRaces, sleeps                             atomic.Uint64
	wakeInterrupt, wakeTimeout, wakeStop, wakeSpurious atomic.Uint64
	wakePredicted, predictHits                         atomic.Uint64
	asleepNs, yields, yieldNs, errors                  atomic.Uint64
	deepSleeps, stalls, stallNs                        atomic.Uint64
	maxStallNs                                         atomic.Int64
	thresholdNs, gapNs, costNs, periodNs, leadNs       atomic.Int64
}

// StallThreshold is how long an empty poll may come after the previous turn before it
// counts as a stall (Stats.Stalls): two orders of magnitude above a poll's cost on a
// native core.
const StallThreshold = 20 * time.Microsecond

// checkStall counts a stall if the empty poll at now came more than StallThreshold after
// the previous turn ended, and returns that gap (-1 at the first turn). It costs the
// polling thread a subtraction and a comparison.
func (d *Idler) checkStall(now int64) int64 {
	if d.turnEnd == 0 {
		return -1
	}
	g := now - d.turnEnd
	if g <= int64(StallThreshold) {
		return g
	}
	d.c.stalls.Add(1)
	d.c.stallNs.Add(uint64(g))
	if g > d.c.maxStallNs.Load() {
		d.c.maxStallNs.Store(g)
	}
	return g
}

// publishAuto makes Auto's estimates visible to Stats and applies its threshold.
func (d *Idler) publishAuto() {
	d.c.gapNs.Store(d.auto.gap)
	d.c.costNs.Store(d.auto.cost)
	d.c.periodNs.Store(d.auto.period)
	d.c.leadNs.Store(d.auto.lead)
	d.setThreshold(d.auto.threshold())
}

// Stats returns the counters. Safe from any goroutine.
func (d *Idler) Stats() Stats {
	c := &d.c
	return Stats{
		Arms:          c.arms.Load(),
		ArmRaces:      c.armRaces.Load(),
		Sleeps:        c.sleeps.Load(),
		WakeInterrupt: c.wakeInterrupt.Load(),
		WakeTimeout:   c.wakeTimeout.Load(),
		WakeStop:      c.wakeStop.Load(),
		DeepSleeps:    c.deepSleeps.Load(),
		WakeSpurious:  c.wakeSpurious.Load(),
		WakePredicted: c.wakePredicted.Load(),
		PredictHits:   c.predictHits.Load(),
		Asleep:        time.Duration(c.asleepNs.Load()),
		Yields:        c.yields.Load(),
		YieldTime:     time.Duration(c.yieldNs.Load()),
		Errors:        c.errors.Load(),
		Stalls:        c.stalls.Load(),
		StallTime:     time.Duration(c.stallNs.Load()),
		MaxStall:      time.Duration(c.maxStallNs.Load()),
		Threshold:     time.Duration(c.thresholdNs.Load()),
		GapEstimate:   time.Duration(c.gapNs.Load()),
		WakeCost:      time.Duration(c.costNs.Load()),
		Period:        time.Duration(c.periodNs.Load()),
		Lead:          time.Duration(c.leadNs.Load()),
	}
}
