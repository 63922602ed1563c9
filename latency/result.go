package latency

import (
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Result is the outcome of one run.
type Result struct {
	Label   string
	Pattern string
	Elapsed time.Duration

	Sent       uint64 // probes sent
	SendErrors uint64 // probes the wire refused (not counted in Sent)
	Received   uint64 // distinct probes that arrived within the timeout (the samples)
	Late       uint64 // distinct probes that arrived after the timeout
	Lost       uint64 // probes that never arrived: Sent − Received − Late
	Duplicates uint64 // extra copies of probes already seen
	Reordered  uint64 // probes that arrived after a probe sent later
	Stale      uint64 // generator frames from before this run
	Foreign    uint64 // frames that are not generator frames

	BackgroundSent     uint64
	BackgroundReceived uint64

	MinNs, MaxNs int64 // exact extremes of the samples
	Pacing       Pacing

	// Hist holds the latencies of the Received probes in ns.
	Hist *hdrhistogram.Histogram

	// DeviceClock is the same run measured on the NICs' clocks (Config.Stamps): from the
	// TX stamp of each probe to its RX stamp; its Received are the probes with both.
	// Clock says how the two clocks were related. Both nil for a software-only run.
	DeviceClock *Result
	Clock       *ClockReport
}

// Summary is the MoonGen set of statistics plus the tail.
type Summary struct {
	Samples                  uint64
	Average, StdDev          float64 // ns; StdDev is the sample standard deviation
	Min, Q1, Median, Q3, Max int64   // ns
	P99, P999                int64   // ns
}

// bucket is one histogram bucket: its representative value and count.
type bucket struct{ value, count int64 }

// buckets returns h's non-empty buckets in increasing order, each valued at the middle of
// its range (exact below 2048 ns).
func buckets(h *hdrhistogram.Histogram) []bucket {
	if h == nil {
		return nil
	}
	var out []bucket
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			out = append(out, bucket{b.From + (b.To-b.From)/2, b.Count})
		}
	}
	return out
}

// Summary computes the statistics of the samples the way MoonGen's histogram does: the
// mean, the sample standard deviation (n−1), and the quantile q as the value of the sample
// at 0-based index ⌈q·n⌉ in sorted order (clamped to the last sample).
func (r *Result) Summary() Summary {
	bs := buckets(r.Hist)
	var n int64
	var sum float64
	for _, b := range bs {
		n += b.count
		sum += float64(b.value) * float64(b.count)
	}
	s := Summary{Samples: uint64(n), Min: r.MinNs, Max: r.MaxNs}
	if n == 0 {
		return s
	}
	s.Average = sum / float64(n)
	if n > 1 {
		var dev float64
		for _, b := range bs {
			d := float64(b.value) - s.Average
			dev += d * d * float64(b.count)
		}
		s.StdDev = math.Sqrt(dev / float64(n-1))
	}
	at := func(q float64) int64 {
		idx := min(int64(math.Ceil(q*float64(n))), n-1)
		var seen int64
		for _, b := range bs {
			seen += b.count
			if idx < seen {
				return b.value
			}
		}
		return bs[len(bs)-1].value
	}
	s.Q1, s.Median, s.Q3 = at(0.25), at(0.5), at(0.75)
	s.P99, s.P999 = at(0.99), at(0.999)
	if s.Max == 0 {
		s.Min, s.Max = bs[0].value, bs[len(bs)-1].value
	}
	// Above 2048 ns a bucket's middle may lie beyond the exact extremes of the samples
	// in it: no quantile is below the smallest sample or above the largest.
	for _, q := range []*int64{&s.Q1, &s.Median, &s.Q3, &s.P99, &s.P999} {
		*q = min(max(*q, s.Min), s.Max)
	}
	return s
}

// MoonGen returns MoonGen's histogram line,
//
//	[LABEL] Samples: N, Average: X ns, StdDev: Y ns, Quartiles: Q1/Q2/Q3 ns
//
// followed by the tail: ", p99: A ns, p99.9: B ns, Max: C ns", the loss ", Lost: L/SENT"
// (always: a reader should not have to know that its absence means none), and the late,
// duplicate and reordered counts when any probe was. Without a label the "[LABEL] " prefix is left out, as in MoonGen.
func (r *Result) MoonGen() string {
	s := r.Summary()
	prefix := ""
	if r.Label != "" {
		prefix = "[" + r.Label + "] "
	}
	line := fmt.Sprintf("%sSamples: %d, Average: %.1f ns, StdDev: %.1f ns, Quartiles: %.1f/%.1f/%.1f ns, p99: %d ns, p99.9: %d ns, Max: %d ns",
		prefix, s.Samples, s.Average, s.StdDev, float64(s.Q1), float64(s.Median), float64(s.Q3), s.P99, s.P999, s.Max)
	line += fmt.Sprintf(", Lost: %d/%d", r.Lost, r.Sent)
	if r.Late+r.Duplicates+r.Reordered > 0 {
		line += fmt.Sprintf(", Late: %d, Duplicates: %d, Reordered: %d", r.Late, r.Duplicates, r.Reordered)
	}
	return line
}
