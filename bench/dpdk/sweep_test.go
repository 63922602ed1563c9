package dpdk

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// rateStep is one probe rate of a sweep: the gap between probes and how many are sent.
type rateStep struct {
	gap    time.Duration
	probes int
}

// kpps is the step's rate in thousands of probes per second.
func (s rateStep) kpps() float64 { return 1e-3 / s.gap.Seconds() }

func (s rateStep) String() string { return fmtKpps(s.kpps()) + " kpps" }

// fmtKpps prints a rate without trailing zeros (0.5, 2.5, 50).
func fmtKpps(k float64) string { return strconv.FormatFloat(k, 'f', -1, 64) }

// Bounds of one rate's probing: its probes are scaled so that it lasts at least
// minProbing and at most maxProbing.
const (
	minProbing = time.Second
	maxProbing = 10 * time.Second
	maxKpps    = 100 // the host's prober paces 10 µs gaps (the burst's) at best
)

// sweepSteps reads -dpdk.rates ("0.5,2.5,10,50", kpps) into steps, each with probes
// probes scaled into [minProbing, maxProbing] of probing at its rate.
func sweepSteps(list string, probes int) ([]rateStep, error) {
	var out []rateStep
	for _, f := range strings.Split(list, ",") {
		k, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || k <= 0 || k > maxKpps || math.IsNaN(k) {
			return nil, fmt.Errorf("-dpdk.rates %q: rate %q is not a number of kpps in (0, %d]", list, f, maxKpps)
		}
		perSec := k * 1e3
		n := min(max(probes, int(math.Ceil(perSec*minProbing.Seconds()))), int(perSec*maxProbing.Seconds()))
		out = append(out, rateStep{gap: time.Duration(float64(time.Second) / perSec), probes: n})
	}
	return out, nil
}

// rotated is s rotated left by r.
func rotated[T any](s []T, r int) []T {
	out := make([]T, 0, len(s))
	for i := range s {
		out = append(out, s[(i+r)%len(s)])
	}
	return out
}
