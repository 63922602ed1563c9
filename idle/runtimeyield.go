package idle

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/uiod/uiod/internal/clip"
)

// RuntimeYieldEvery is how long a polling thread polls without giving its CPU away (no
// sleep, no housekeeping yield: Busy, or Adaptive under traffic that never lets it reach
// its threshold) before Empty tells it to yield to the Go scheduler. The runtime preempts
// a goroutine that has run 10 ms without a scheduling point, and a locked goroutine's
// preemption hands its P over through another thread, which keeps the poll thread off
// its CPU for hundreds of µs under TCG; a voluntary yield a little before that point
// costs the unlocked round trip of runtime.Gosched instead, plus a re-pin whenever the
// goroutine comes back on another thread (the dataplane does both: docs/design.md §4,
// bench/preempt).
const RuntimeYieldEvery = 8 * time.Millisecond

// RuntimeYieldEnv names the environment variable that overrides the runtime yield, for
// measurements: "off" (or 0) never yields, a duration ("4ms") yields after that long;
// unset or "on", after RuntimeYieldEvery. On is the default: in the TCG guest it cut the
// runtime's forced preemptions from about 48 a second to 1 and the spin loop's gaps over
// 500 µs from 117 to 6 in 4 s (bench/preempt); bench/dpdk's uiod-busy-noyield measures
// uiod-busy without it.
const RuntimeYieldEnv = "UIOD_RUNTIME_YIELD"

// RuntimeYieldFromEnv is the runtime-yield interval RuntimeYieldEnv asks for:
// RuntimeYieldEvery when unset, 0 when off.
func RuntimeYieldFromEnv() (time.Duration, error) {
	switch v := os.Getenv(RuntimeYieldEnv); v {
	case "", "on":
		return RuntimeYieldEvery, nil
	case "off":
		return 0, nil
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s=%s: want on, off or a duration such as 8ms", RuntimeYieldEnv, clip.Quote(v))
		}
		return d, nil
	}
}

// SetRuntimeYield turns the runtime yield on (every > 0) or off: from then on Empty
// returns true at an empty poll once the thread has polled for every without a rest,
// counted from since or from its last rest, whichever is later. Only a thread locked to
// its OS thread should turn it on (the dataplane's loop does, when it starts and for
// every Idler SetPolicy hands it). Only the polling thread may call it.
func (d *Idler) SetRuntimeYield(every time.Duration, since int64) {
	d.yieldAfter = math.MaxInt64
	if every > 0 {
		d.yieldAfter = int64(every)
	}
	d.restEnd = max(d.restEnd, since)
}

// RestEnd is when the thread last came back from giving its CPU away (a wait, a range
// sleep, a housekeeping yield or a runtime yield, as Now reads it), or the since of
// SetRuntimeYield if later; 0 if neither. Only the polling thread may call it.
func (d *Idler) RestEnd() int64 { return d.restEnd }

// Rested tells the Idler that the thread gave its CPU away outside it, between two
// turns, until end: the runtime yield Empty asked for. The runtime yield's interval
// starts again, and the gap before the next poll is no stall (Stats.Stalls). Only the
// polling thread may call it.
func (d *Idler) Rested(end int64) { d.turnEnd, d.restEnd = end, end }
