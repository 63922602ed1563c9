// Package benchstat holds the statistics the project's benchmarks report with: order
// statistics of latency samples, medians of repeated runs, bootstrap resampling of rounds
// with its 90 % interval, and a logarithmic latency histogram that merges cheaply. It is
// for tests and benchmarks only.
package benchstat

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Percentile is the p-th percentile (0..100) of sorted, the sample at rank
// (len-1)·p/100; 0 for no samples.
func Percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// Median is the median of v (the mean of the two middle values of an even count), 0 for
// none. v is left as it was.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Resample fills pick with a bootstrap resample of len(pick) rounds: each entry a round
// index drawn from rng with replacement, in order.
func Resample(rng *rand.Rand, pick []int) {
	for i := range pick {
		pick[i] = rng.IntN(len(pick))
	}
}

// Interval is the 5th and 95th percentiles of the bootstrap statistics s (a 90 %
// interval); it sorts s. Both are 0 for no samples.
func Interval(s []float64) (lo, hi float64) {
	if len(s) == 0 {
		return 0, 0
	}
	slices.Sort(s)
	return s[len(s)*5/100], s[len(s)*95/100]
}

// LogHist is a latency histogram with buckets 2 % wide, from 1 ns to about 10 s: a
// fixed array, so that per-round histograms merge in a bootstrap without keeping every
// sample.
type LogHist [logHistBuckets]uint32

const logHistBuckets = 1200

var logHistStep = math.Log1p(0.02)

// Add counts one latency of ns nanoseconds (longer ones in the last bucket).
func (h *LogHist) Add(ns int64) {
	b := 0
	if ns > 1 {
		b = min(int(math.Log(float64(ns))/logHistStep), logHistBuckets-1)
	}
	h[b]++
}

// Merge adds o's counts to h.
func (h *LogHist) Merge(o *LogHist) {
	for i, n := range o {
		h[i] += n
	}
}

// Quantile is the lower bound (ns) of the bucket holding the p-th percentile, 0 when
// empty.
func (h *LogHist) Quantile(p int) float64 {
	var total uint64
	for _, n := range h {
		total += uint64(n)
	}
	if total == 0 {
		return 0
	}
	rank := (total - 1) * uint64(p) / 100
	var seen uint64
	for i, n := range h {
		seen += uint64(n)
		if seen > rank {
			return math.Exp(float64(i) * logHistStep)
		}
	}
	return 0
}
