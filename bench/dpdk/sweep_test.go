package dpdk

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
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

func TestSweepSteps(t *testing.T) {
	for _, tc := range []struct {
		list   string
		probes int
		want   []rateStep // nil: an error
	}{
		{"0.5,2.5,10,50", 5000, []rateStep{{2 * time.Millisecond, 5000}, {400 * time.Microsecond, 5000}, {100 * time.Microsecond, 10000}, {20 * time.Microsecond, 50000}}},
		// 200 probes last at least a second at every rate, 100 000 at most 10 s.
		{"0.5, 50", 200, []rateStep{{2 * time.Millisecond, 500}, {20 * time.Microsecond, 50000}}},
		{"0.5,50", 100000, []rateStep{{2 * time.Millisecond, 5000}, {20 * time.Microsecond, 100000}}},
		{"0", 5000, nil},
		{"-1", 5000, nil},
		{"2.5,,10", 5000, nil},
		{"fast", 5000, nil},
		{"NaN", 5000, nil},
		{"500", 5000, nil},
	} {
		got, err := sweepSteps(tc.list, tc.probes)
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), "-dpdk.rates") {
				t.Errorf("%q: %v, %v, want an error naming -dpdk.rates", tc.list, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: %v, %v, want %v", tc.list, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q step %d: %+v, want %+v", tc.list, i, got[i], tc.want[i])
			}
		}
	}
}

func TestRotated(t *testing.T) {
	s := []string{"a", "b", "c"}
	for r, want := range []string{"abc", "bca", "cab", "abc"} {
		if got := strings.Join(rotated(s, r), ""); got != want {
			t.Errorf("rotated by %d: %s, want %s", r, got, want)
		}
	}
}

// The report of a two-rate sweep has a rate column, medians per rate (three rounds: the
// middle one) and the default policy's comparison with l3fwd-power rate by rate.
func TestReportTextRates(t *testing.T) {
	mk := func(name string, kpps float64, round int, cpu float64, p99us int64) run {
		r := run{name: name, kpps: kpps, round: round, probeCPU: cpu, idleCPU: 1}
		r.lat.MedianNs, r.lat.P99Ns, r.lat.Sent, r.lat.Received = 100e3, p99us*1e3, 10, 10
		return r
	}
	var runs []run
	for round, f := range []float64{1, 3, 2} {
		runs = append(runs,
			mk("l3fwd-power", 0.5, round+1, 10*f, 200),
			mk("uiod-auto", 0.5, round+1, 20*f, 400), // worse on both
			mk("l3fwd-power", 50, round+1, 90, 100),
			mk("uiod-auto", 50, round+1, 45, 300), // worse on p99 only
		)
	}
	testutil.TextContains(t, "report", reportText(runs),
		"| uiod-auto | 0.5 | 2 | 60.0 |",                   // the runs, with their rate
		"| uiod-auto | 0.5 | 40.0 | 1.0 | 100.0 | 400.0 |", // the median of 20, 60, 40
		"ratios of the medians at 0.5 kpps",
		"ratios of the medians at 50 kpps",
		"probed CPU uiod-auto / l3fwd-power: 2.00×",
		"| uiod-auto | 0.5 | 2.00× | 1.00× | 2.00× | true |",
		"| uiod-auto | 50 | 0.50× | 1.00× | 3.00× | false |",
	)
	// One rate: no sweep table.
	testutil.TextLacks(t, "a one-rate report", reportText(runs[:2]), "by rate")
}
