package irq

import "time"

// Tuning of idle_threshold: auto.
const (
	// autoWakeFloor is added to the measured cost of an arm-sleep-wake cycle for the part
	// the loop cannot see: the kernel's eventfd → epoll wake-up of a sleeping thread
	// (3–8 µs p50 measured on the reference VM, DESIGN §3).
	autoWakeFloor = int64(10 * time.Microsecond)
	// autoRatio: sleeping at once pays when the expected gap to the next frame exceeds
	// this many wake-up costs.
	autoRatio = 4
	// autoShift is the EWMA weight 1/2^autoShift: with gaps clamped at twice the
	// configured threshold, a switch from trickle to burst is recognised within ~8 frames.
	autoShift = 2
)

// autoThreshold is the estimator behind PolicyConfig.Auto (issue 8). It keeps two running
// averages per thread, updated with shifts and no allocation: the gap between polls that
// found frames (each gap clamped to twice the configured threshold, so one long silence
// does not take many frames to forget) and the cost of one arm-sleep-wake cycle. After each
// empty poll the Idler compares the time since the last frame with threshold(): when the
// next frame is expected later than autoRatio wake-ups would cost — by the average gap
// and by the last gap alike — sleeping at once (0) is cheaper than polling and costs only
// that wake-up in latency; otherwise it keeps polling up to the configured threshold,
// like the fixed policy. Requiring both makes the start of a burst switch to polling at
// its second frame, while a return to trickling traffic takes a couple of frames to move
// the average.
type autoThreshold struct {
	max       int64 // configured threshold (ns)
	gap       int64 // EWMA of inter-arrival gaps (ns)
	cost      int64 // EWMA of one sleep cycle's cost (ns)
	lastGap   int64 // the most recent gap (ns, clamped)
	lastFrame int64 // time of the last poll that found frames, 0 before the first
}

func (a *autoThreshold) init(max int64) {
	*a = autoThreshold{max: max, cost: autoWakeFloor}
}

// frame records a poll that found frames at time now.
func (a *autoThreshold) frame(now int64) {
	if a.lastFrame != 0 {
		g := now - a.lastFrame
		if lim := 2 * a.max; g > lim {
			g = lim
		}
		a.gap += (g - a.gap) >> autoShift
		a.lastGap = g
	}
	a.lastFrame = now
}

// cycle records the loop's own overhead (ns) of one arm-sleep-wake cycle.
func (a *autoThreshold) cycle(overhead int64) {
	c := overhead + autoWakeFloor
	a.cost += (c - a.cost) >> autoShift
}

// threshold is the idle threshold to apply now.
func (a *autoThreshold) threshold() int64 {
	if lim := autoRatio * a.cost; a.gap > lim && a.lastGap > lim {
		return 0
	}
	return a.max
}
