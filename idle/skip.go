package idle

import "time"

// Empty polls the loop need not tell: a polling thread whose policy has nothing to do at
// most empty polls (Busy, or Adaptive short of its threshold) spends most of an empty
// turn reading the clock for Empty. Skip lets it leave a run of empty polls untold, no
// clock read and no Empty, sized so that the run takes about SkipTarget: each Empty
// measures the gap since the previous turn ended (the untold polls and its own) and
// doubles the next run while the gap stays under half the target, halves it above the
// target. What the policy does at an empty poll then happens at most a run later: a
// sleep past the idle threshold, a housekeeping yield, the end of Auto's watch, all
// delayed by about SkipTarget (µs against thresholds of hundreds of µs and periods of
// ms). A stall (Stats.Stalls) is measured over the run, so the time it counts may include
// up to a run of polling (about SkipTarget, well under StallThreshold).
const (
	// SkipTarget is how long a run of untold empty polls may take.
	SkipTarget = 2 * time.Microsecond
	// MaxSkip bounds a run, in polls.
	MaxSkip = 64
)

// Skip is the loop's call at an empty poll before it reads the clock for Empty: true
// means the poll is one of a run Empty allowed, and the loop goes on polling without
// telling the Idler (nor reading the clock); false means it must call Empty. The run
// ends at the next Traffic or Empty, never covers a poll after a sleep, a yield or a
// wake-up (Empty runs there), and is always empty under SleepRange, which sleeps at every
// empty poll. It allocates nothing and is inlined.
func (d *Idler) Skip() bool {
	if d.spare > 0 {
		d.spare--
		return true
	}
	return false
}

// plan sizes the run of untold polls after the Empty at now, which began at begin (now
// is later if the turn slept or yielded). g is the gap from the previous turn's end to
// begin, over the run granted last and this poll (-1 at the first turn: nothing measured).
func (d *Idler) plan(begin, now, g int64) {
	run := d.run
	switch {
	case d.cfg.Mode == SleepRange || now != begin:
		run = 0 // sleeps at every empty poll, or this turn rested: tell the next one
	case d.pinRun > 0:
		run = d.pinRun
	case g < 0:
	case g > int64(SkipTarget):
		run /= 2
	case g <= int64(SkipTarget)/2 && run < MaxSkip:
		run = max(1, 2*run)
	}
	d.run, d.spare = run, run
}

// SkipRun is the run of untold empty polls the last Empty allowed (0 after Traffic).
// Only the polling thread may call it.
func (d *Idler) SkipRun() int { return d.run }

// PinSkipRun makes every Empty allow a run of n untold polls instead of sizing the run by
// time (n ≤ 0 restores the sizing); runs after a rest and under SleepRange stay empty. It
// is for instruction counts under valgrind, whose clock advances about 50 times faster
// against the code than a native run's, so that the sized run would stay near 0: the
// count then pins the run a native run settles on (BenchmarkLoopStep reports it). Only
// the polling thread may call it.
func (d *Idler) PinSkipRun(n int) { d.pinRun = min(max(n, 0), MaxSkip) }
