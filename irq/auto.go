package irq

import "time"

// Tuning of idle_threshold: auto.
const (
	// autoWakeFloor is added to the measured cost of an arm-sleep-wake cycle for the part
	// the loop cannot see: the kernel's eventfd → epoll wake-up of a sleeping thread
	// (3–8 µs p50 measured on the reference VM, DESIGN §3).
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
)

// autoThreshold is the estimator behind PolicyConfig.Auto (issue 8). It keeps a ring of
// the last autoWindow gaps between polls that found frames (clamped to four times the
// configured threshold, which is all the ordering needs) and a running average of the
// cost of one arm-sleep-wake cycle. Every autoEvery frames it sorts a stack copy of the
// ring and takes the median gap m and the 90th percentile q; then, with cap the
// configured threshold:
//
//   - m > cap: polling to cap would catch fewer than half the frames, so it sleeps at
//     the first empty poll (threshold 0); a frame then costs one wake-up.
//   - q ≤ cap: polling for q plus one wake-up catches about nine frames in ten and
//     sleeps soon after traffic stops. Regular traffic (q ≤ autoSpread·m) polls for
//     3q, or for twice the longest pause shorter than cap seen in about the last 512
//     frames if that is longer, plus a wake-up: a sleep in the middle of dense traffic
//     delays not one frame but every frame that arrives during the wake-up, so a
//     sender's hiccups must not put the thread to sleep, while the end of a burst
//     without hiccups still does after a few gaps' time.
//   - otherwise it polls to cap, like the fixed policy.
//
// Two detectors act between window updates, on consecutive gaps: autoTrickle gaps
// longer than cap switch to sleeping at once (a burst ended and trickling traffic
// followed), and autoBurst gaps shorter than cap/2 while sleeping at once switch to
// polling to cap (a burst started). The result never exceeds cap, so auto polls at most
// as long as the fixed policy after any frame; frame and threshold allocate nothing and
// make no system call.
type autoThreshold struct {
	max       int64 // configured threshold, cap (ns)
	cost      int64 // EWMA of one sleep cycle's cost (ns)
	gap       int64 // median gap of the window (ns), for the stats
	q90       int64 // 90th-percentile gap of the window (ns)
	pause     int64 // decaying maximum of the gaps ≤ max (ns)
	base      int64 // the window's decision (ns)
	t         int64 // the threshold in force (ns)
	lastFrame int64 // time of the last poll that found frames, 0 before the first
	ring      [autoWindow]int64
	n         int // gaps recorded, saturating at autoWindow
	pos       int // next ring slot
	due       int // frames until the next window update
	long      int // consecutive gaps > max
	short     int // consecutive gaps < max/2
}

func (a *autoThreshold) init(max int64) {
	*a = autoThreshold{max: max, cost: autoWakeFloor, base: max, t: max}
}

// frame records a poll that found frames at time now.
func (a *autoThreshold) frame(now int64) {
	last := a.lastFrame
	a.lastFrame = now
	if last == 0 {
		return
	}
	g := now - last
	if lim := 4 * a.max; g > lim {
		g = lim
	}
	if g <= a.max && g > a.pause {
		a.pause = g
	} else {
		a.pause -= a.pause >> autoPauseShift
	}
	a.ring[a.pos] = g
	a.pos = (a.pos + 1) % autoWindow
	if a.n < autoWindow {
		a.n++
	}
	switch {
	case g > a.max:
		a.long++
		a.short = 0
	case 2*g < a.max:
		a.short++
		a.long = 0
	default:
		a.long, a.short = 0, 0
	}
	if a.due--; a.due <= 0 {
		a.due = autoEvery
		a.update()
	}
	a.decide()
}

// update recomputes the window's quantiles and decision.
func (a *autoThreshold) update() {
	n := a.n
	if n < autoEvery {
		a.base = a.max
		return
	}
	var s [autoWindow]int64
	copy(s[:], a.ring[:n])
	for i := 1; i < n; i++ { // insertion sort: 32 elements, no allocation
		v := s[i]
		j := i
		for ; j > 0 && s[j-1] > v; j-- {
			s[j] = s[j-1]
		}
		s[j] = v
	}
	a.gap = s[(n-1)/2]
	a.q90 = s[(9*n-1)/10]
	switch {
	case a.gap > a.max:
		a.base = 0
	case a.q90 > a.max:
		a.base = a.max
	case a.q90 <= autoSpread*a.gap:
		a.base = min(a.max, max(3*a.q90, 2*a.pause)+a.cost)
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
