package latency

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteCSV writes the histogram as CSV: a "latency,count" header, then one row per
// non-empty bucket in increasing latency (ns), like MoonGen's histogram files.
func (r *Result) WriteCSV(w io.Writer) error {
	if _, err := io.WriteString(w, "latency,count\n"); err != nil {
		return err
	}
	for _, b := range buckets(r.Hist) {
		if _, err := fmt.Fprintf(w, "%d,%d\n", b.value, b.count); err != nil {
			return err
		}
	}
	return nil
}

// resultJSON is the JSON form of a Result.
type resultJSON struct {
	Label              string       `json:"label,omitempty"`
	Pattern            string       `json:"pattern,omitempty"`
	ElapsedNs          int64        `json:"elapsed_ns"`
	Sent               uint64       `json:"sent"`
	SendErrors         uint64       `json:"send_errors"`
	Received           uint64       `json:"received"`
	Late               uint64       `json:"late"`
	Lost               uint64       `json:"lost"`
	Duplicates         uint64       `json:"duplicates"`
	Reordered          uint64       `json:"reordered"`
	Stale              uint64       `json:"stale"`
	Foreign            uint64       `json:"foreign"`
	BackgroundSent     uint64       `json:"background_sent"`
	BackgroundReceived uint64       `json:"background_received"`
	Samples            uint64       `json:"samples"`
	AverageNs          float64      `json:"average_ns"`
	StdDevNs           float64      `json:"stddev_ns"`
	MinNs              int64        `json:"min_ns"`
	Q1Ns               int64        `json:"q1_ns"`
	MedianNs           int64        `json:"median_ns"`
	Q3Ns               int64        `json:"q3_ns"`
	P99Ns              int64        `json:"p99_ns"`
	P999Ns             int64        `json:"p999_ns"`
	MaxNs              int64        `json:"max_ns"`
	Pacing             Pacing       `json:"pacing"`
	Histogram          []bucketJSON `json:"histogram"`
	// DeviceClock is the run on the NICs' clocks, Clock how they were related.
	DeviceClock *Result      `json:"device_clock,omitempty"`
	Clock       *ClockReport `json:"clock,omitempty"`
}

type bucketJSON struct {
	LatencyNs int64 `json:"latency_ns"`
	Count     int64 `json:"count"`
}

// MarshalJSON encodes the result with its summary statistics and its histogram as a list
// of {latency_ns, count}.
func (r *Result) MarshalJSON() ([]byte, error) {
	s := r.Summary()
	j := resultJSON{
		Label: r.Label, Pattern: r.Pattern, ElapsedNs: int64(r.Elapsed),
		Sent: r.Sent, SendErrors: r.SendErrors, Received: r.Received, Late: r.Late, Lost: r.Lost,
		Duplicates: r.Duplicates, Reordered: r.Reordered, Stale: r.Stale, Foreign: r.Foreign,
		BackgroundSent: r.BackgroundSent, BackgroundReceived: r.BackgroundReceived,
		Samples: s.Samples, AverageNs: s.Average, StdDevNs: s.StdDev,
		MinNs: s.Min, Q1Ns: s.Q1, MedianNs: s.Median, Q3Ns: s.Q3,
		P99Ns: s.P99, P999Ns: s.P999, MaxNs: s.Max,
		Pacing:    r.Pacing,
		Histogram: []bucketJSON{},

		DeviceClock: r.DeviceClock, Clock: r.Clock,
	}
	for _, b := range buckets(r.Hist) {
		j.Histogram = append(j.Histogram, bucketJSON{b.value, b.count})
	}
	return json.Marshal(j)
}

// WriteCSVRuns writes the histograms of several runs as one CSV: a "label,latency,count"
// header, then each run's non-empty buckets labelled with its Label.
func WriteCSVRuns(w io.Writer, results []*Result) error {
	if _, err := io.WriteString(w, "label,latency,count\n"); err != nil {
		return err
	}
	for _, r := range results {
		label := csvField(r.Label)
		for _, b := range buckets(r.Hist) {
			if _, err := fmt.Fprintf(w, "%s,%d,%d\n", label, b.value, b.count); err != nil {
				return err
			}
		}
	}
	return nil
}

// csvField quotes s if CSV needs it to.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// FormatNs formats a latency in ns with a unit that keeps it short: 850ns, 12.3µs, 150µs,
// 1.25ms, 42ms.
func FormatNs(ns int64) string {
	switch {
	case ns >= 10_000_000:
		return fmt.Sprintf("%.0fms", float64(ns)/1e6)
	case ns >= 1_000_000:
		return fmt.Sprintf("%.2fms", float64(ns)/1e6)
	case ns >= 10_000:
		return fmt.Sprintf("%.0fµs", float64(ns)/1e3)
	case ns >= 1000:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%dns", ns)
}
