package idle

import "time"

// Tuning of idle_threshold: auto.
const (
	// autoWakeFloor is added to the measured cost of an arm-sleep-wake cycle for the part
	// the loop cannot see: the kernel's eventfd → epoll wake-up of a sleeping thread
	// (docs/design.md §12).
	autoWakeFloor = int64(10 * time.Microsecond)
	// autoCostShift is the wake cost's EWMA weight, 1/2^autoCostShift. One sample
	// counts at most autoCostJump times the estimate: a cycle in which the thread was
	// preempted says little about the next one.
	autoCostShift = 3
	autoCostJump  = 4
	// autoWindow is how many recent gaps the estimator decides from (a power of two).
	autoWindow = 32
	// autoEvery: the window's quantiles are recomputed every autoEvery frames.
	autoEvery = 4
	// autoTrickle consecutive gaps longer than the configured threshold switch to
	// sleeping at once without waiting for the window to turn over.
	autoTrickle = 3
	// autoBurst consecutive gaps shorter than half the configured threshold switch from
	// sleeping at once back to polling without waiting for the window.
	autoBurst = 2
	// autoSpread: traffic whose 90th-percentile gap exceeds autoSpread times its median
	// is irregular (Poisson-like); regular traffic gets a wider polling margin, because
	// a longer gap in it is a hiccup of the sender, not the end of traffic.
	autoSpread = 2
	// autoPauseShift: the longest recent pause within regular traffic decays by
	// 1/2^autoPauseShift per frame (a time constant of 512 frames).
	autoPauseShift = 9
	// Periodic traffic is predicted: when the window's quartile gaps lie within
	// 1/autoPeriodicSpread of the median plus the lead (quartiles, so that a quarter of
	// the gaps may be a jittery sender's or a late wake-up's outliers; plus the lead,
	// because the times of frames caught by interrupt are late by a wake-up, which the
	// lead is about), and the median leaves a sleep of at least autoPredictMin (and
	// autoPredictCost wake costs) before the next frame is due,
	// the thread sleeps at once and sets a timer to wake a lead before the next frame,
	// then polls for it; the interrupt stays armed for a frame that comes early.
	autoPeriodicSpread = 8
	autoPredictMin     = int64(50 * time.Microsecond)
	autoPredictCost    = 4
	// The lead starts at autoLeadInit and tracks the autoLeadHit-th percentile of how
	// late the timer wakes the thread relative to the frame (the timer's own lateness and
	// the traffic's jitter together): a frame caught by polling after the timer shortens
	// it by autoLeadStep, a frame that beat the timer (came by interrupt) lengthens it by
	// autoLeadHit/(100-autoLeadHit) steps, which balances at autoLeadHit % caught. It is
	// never shorter than autoLeadMin, so that a punctual timer and sender are caught
	// every time rather than at autoLeadHit %.
	autoLeadInit = int64(10 * time.Microsecond)
	autoLeadMin  = int64(2 * time.Microsecond)
	autoLeadStep = int64(time.Microsecond)
	autoLeadHit  = 70
	autoLeadCost = 4
	// autoGapLimit: gaps are recorded up to this long (see gapLimit).
	autoGapLimit = int64(time.Second)
)

// autoThreshold is the estimator behind PolicyConfig.Auto. It keeps a ring of
// the last autoWindow gaps between polls that found frames (clamped to the longer of four
// times the configured threshold and autoGapLimit) and a running average of the cost of
// one arm-sleep-wake cycle. Beside the ring it keeps the same gaps sorted (each frame
// moves at most 32 of them by one slot, instead of a sort that would stall one poll in
// four); every autoEvery frames it takes the median gap m and the 90th percentile q from
// them; then, with cap the configured threshold:
//
//   - m > cap: polling to cap would catch fewer than half the frames, so it sleeps at
//     the first empty poll (threshold 0); a frame then costs one wake-up.
//   - q ≤ cap: polling for q plus one wake-up catches about nine frames in ten and
//     sleeps soon after traffic stops. Regular traffic (q ≤ autoSpread·m) polls for
//     the longest of 3q, twice the longest pause shorter than cap seen in about the
//     last 512 frames, and cap/2, plus a wake-up: a sleep in the middle of dense traffic
//     delays not one frame but every frame that arrives during the wake-up (and a vCPU
//     or a deep C-state may take milliseconds to come back), so a sender's hiccups must
//     not put the thread to sleep, while the end of a burst still does sooner than the
//     fixed policy would.
//   - otherwise it polls to cap, like the fixed policy.
//
// Two detectors act between window updates, on consecutive gaps: autoTrickle gaps
// longer than cap switch to sleeping at once (a burst ended and trickling traffic
// followed), and autoBurst gaps shorter than cap/2 while sleeping at once switch to
// polling to cap (a burst started). The result never exceeds cap, so auto polls at most
// as long as the fixed policy after any frame; frame and threshold allocate nothing and
// make no system call.
//
// Periodic traffic (see autoPeriodicSpread) is also predicted: the thread sleeps at once
// but wakes by timer a lead before the next frame is due (wakeAt) and polls until a little
// after it (watchEnd). A frame then costs the timer's wake-up, which happens before it
// arrives, instead of an interrupt's, which happens after: it is caught by polling, at the
// price of polling for however much the lead exceeded the timer's lateness. The schedule
// is phase-locked (schedule): a frame caught by polling after such a wake-up pulls it
// towards its time, one that beat the timer pulls it towards when it woke the thread, and
// one caught by interrupt near its due time leaves it. The lead is steered by the outcome
// of every prediction (see autoLeadInit), so it absorbs the timer's lateness and the
// traffic's jitter on whatever machine it runs.
type autoThreshold struct {
	max       int64             // configured threshold, cap (ns)
	cost      int64             // EWMA of one sleep cycle's cost (ns)
	gap       int64             // median gap of the window (ns), for the stats
	q90       int64             // 90th-percentile gap of the window (ns)
	q25, q75  int64             // quartile gaps of the window (ns)
	period    int64             // the predicted gap of periodic traffic (ns), 0 when not predicting
	due       int64             // when the next periodic frame is expected (ns), 0 when not known
	lead      int64             // how long before due the timer wakes the thread (ns)
	late      int64             // EWMA of how late a timer wakes the thread, taken as the wake-up's latency (ns)
	exact     bool              // the frame being recorded was caught by polling after a timer wake-up
	earlyAt   int64             // the frame being recorded woke the thread by interrupt then, before its timer
	pause     int64             // decaying maximum of the gaps ≤ max (ns)
	base      int64             // the window's decision (ns)
	t         int64             // the threshold in force (ns)
	lastFrame int64             // time of the last poll that found frames, 0 before the first
	ring      [autoWindow]int64 // the window's gaps in arrival order
	sorted    [autoWindow]int64 // the same gaps in ascending order (the first n)
	n         int               // gaps recorded, saturating at autoWindow
	pos       int               // next ring slot
	every     int               // frames until the next window update
	long      int               // consecutive gaps > max
	short     int               // consecutive gaps < max/2
}

func (a *autoThreshold) init(max int64) {
	*a = autoThreshold{max: max, cost: autoWakeFloor, lead: autoLeadInit, late: autoWakeFloor, base: max, t: max}
}

// frame records a poll that found frames at time now.
func (a *autoThreshold) frame(now int64) {
	last := a.lastFrame
	a.lastFrame = now
	if last == 0 {
		return
	}
	g := now - last
	if lim := a.gapLimit(); g > lim {
		g = lim
	}
	if g <= a.max && g > a.pause {
		a.pause = g
	} else {
		a.pause -= a.pause >> autoPauseShift
	}
	if a.n == autoWindow {
		a.unsort(a.ring[a.pos])
	}
	a.ring[a.pos] = g
	a.pos = (a.pos + 1) % autoWindow
	a.insort(g)
	switch {
	case g > a.max:
		a.long++
		a.short = 0
	case 2*g < a.max && (a.period == 0 || 2*g < a.period):
		// Shorter than half of cap, and of the predicted period: a burst.
		a.short++
		a.long = 0
	default:
		a.long, a.short = 0, 0
	}
	if a.every--; a.every <= 0 {
		a.every = autoEvery
		a.update()
	}
	a.decide()
	a.schedule(now)
}

// schedule advances the periodic schedule past the frame at now.
func (a *autoThreshold) schedule(now int64) {
	exact, earlyAt := a.exact, a.earlyAt
	a.exact, a.earlyAt = false, 0
	switch {
	case a.period == 0:
		a.due = 0
	case a.due == 0 || now-a.due >= a.period/2 || a.due-now >= a.period/2:
		// Not this slot's frame: traffic resumed after a pause, or frames were lost.
		a.due = now + a.period
	case exact:
		// Caught by polling, so now is when it came, give or take a poll: move the
		// schedule towards it, half way if it came early, an eighth if late. A frame can
		// be delayed on its way but not advanced, so an early one says more about the
		// schedule; a sender's late frame is usually followed by one on time.
		e := now - a.due
		if e > 0 {
			e /= 8
		} else {
			e /= 2
		}
		a.due += a.period + e
	case earlyAt != 0 && earlyAt < a.due:
		// It woke the thread by interrupt before the timer: it came before earlyAt, so
		// the schedule is late by more than due-earlyAt; move it half way there.
		a.due += a.period + (earlyAt-a.due)/2
	default:
		// Caught by interrupt near its time: its time is late by the wake-up.
		a.due += a.period
	}
}

// gapLimit is the longest gap recorded: longer ones are recorded as this. Four times cap
// is all the threshold needs; predicting periodic traffic needs the real gaps.
func (a *autoThreshold) gapLimit() int64 { return max(4*a.max, autoGapLimit) }

// insort adds g to the sorted window (a.n < autoWindow).
func (a *autoThreshold) insort(g int64) {
	i := a.search(g + 1) // after the gaps equal to g
	copy(a.sorted[i+1:a.n+1], a.sorted[i:a.n])
	a.sorted[i] = g
	a.n++
}

// unsort removes one gap equal to g from the sorted window.
func (a *autoThreshold) unsort(g int64) {
	i := a.search(g)
	copy(a.sorted[i:a.n-1], a.sorted[i+1:a.n])
	a.n--
}

// search is the index of the first gap ≥ g in the sorted window.
func (a *autoThreshold) search(g int64) int {
	lo, hi := 0, a.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a.sorted[m] < g {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// update recomputes the window's quantiles and decision.
func (a *autoThreshold) update() {
	n := a.n
	if n < autoEvery {
		a.base = a.max
		return
	}
	s := &a.sorted
	a.gap = s[(n-1)/2]
	a.q90 = s[(9*n-1)/10]
	a.q25, a.q75 = s[n/4], s[(3*n-1)/4]
	a.period = 0
	if autoPeriodicSpread*(a.q75-a.q25-a.lead) <= a.gap && a.q75 < a.gapLimit() &&
		a.gap-a.lead >= max(autoPredictMin, autoPredictCost*a.cost) {
		a.period = a.gap
		a.base = 0
		return
	}
	a.lead -= (a.lead - autoLeadInit) / 8 // not predicting: back towards the start
	switch {
	case a.gap > a.max:
		a.base = 0
	case a.q90 > a.max:
		a.base = a.max
	case a.q90 <= autoSpread*a.gap:
		a.base = min(a.max, max(3*a.q90, 2*a.pause, a.max/2)+a.cost)
	default:
		a.base = min(a.max, a.q90+a.cost)
	}
}

// decide combines the window's decision with the trickle and burst detectors.
func (a *autoThreshold) decide() {
	switch {
	case a.long >= autoTrickle:
		a.t = 0
	case a.base == 0 && a.short >= autoBurst:
		a.t = a.max
	default:
		a.t = a.base
	}
}

// wakeAt is when a thread that sleeps now should wake by timer to poll for the next
// periodic frame, or 0 if the traffic is not predicted. It is only meaningful while the
// threshold is 0.
func (a *autoThreshold) wakeAt() int64 {
	if a.period == 0 || a.t != 0 || a.due == 0 {
		return 0
	}
	return a.due - a.lead
}

// watchEnd is until when a thread woken by wakeAt's timer polls for the frame before it
// sleeps again, on its interrupt alone: as long after due as the lead is before it, plus
// how much later than the median the upper quartile of the window's gaps comes.
func (a *autoThreshold) watchEnd() int64 {
	return a.due + a.lead + (a.q75 - a.gap)
}

// caught records that the frame about to be recorded was caught by polling after a
// timer wake-up: it anchors the schedule, and the lead was long enough.
func (a *autoThreshold) caught() {
	a.exact = true
	a.lead = max(a.lead-autoLeadStep, autoLeadMin)
}

// early records that a frame woke the thread by interrupt at time at, before its timer:
// the lead was too short, or the schedule late. The lead never grows past autoLeadCost
// wake-up costs: polling that long for a frame costs more than sleeping until its
// interrupt, so when the frames' jitter needs more, a share of them comes by interrupt
// instead.
func (a *autoThreshold) early(at int64) {
	a.earlyAt = at
	a.lead = min(a.lead+autoLeadStep*autoLeadHit/(100-autoLeadHit), max(autoLeadCost*a.cost, autoLeadInit))
}

// woke records how late a timer woke the thread. Interrupts wake it through the same
// path, so the average is also taken for how late a frame caught by interrupt is seen.
func (a *autoThreshold) woke(late int64) {
	late = min(max(late, 0), autoCostJump*a.late)
	a.late = max(a.late+(late-a.late)>>autoCostShift, 1)
}

// cycle records the loop's own overhead (ns) of one arm-sleep-wake cycle.
func (a *autoThreshold) cycle(overhead int64) {
	c := overhead + autoWakeFloor
	if lim := autoCostJump * a.cost; c > lim {
		c = lim
	}
	a.cost += (c - a.cost) >> autoCostShift
}

// threshold is the idle threshold to apply now.
func (a *autoThreshold) threshold() int64 { return a.t }
