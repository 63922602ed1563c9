package latency

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// LatencyHeading is the heading of the latency columns every uiod latency table has, in
// --sim and on wires alike: the samples, p50, p99 and maximum in µs (the MoonGen line
// beside it keeps ns), and with DeviceColumns the same on the device clocks.
const LatencyHeading = "samples\tp50(µs)\tp99(µs)\tmax(µs)\t"

// DeviceHeading is the heading of the device-clock columns (DeviceCells).
const DeviceHeading = "dev p50(µs)\tdev p99(µs)\tclock ±(ns)\t"

// LatencyCells are r's cells under LatencyHeading: n/a for the latencies of a run that
// brought no probe back.
func LatencyCells(r *Result) string {
	s := r.Summary()
	lat := func(ns int64) string {
		if s.Samples == 0 {
			return "n/a"
		}
		return micros(ns)
	}
	return fmt.Sprintf("%d\t%s\t%s\t%s\t", s.Samples, lat(s.Median), lat(s.P99), lat(s.Max))
}

// DeviceCells are r's cells under DeviceHeading: n/a without device-clock samples.
func DeviceCells(r *Result) string {
	d := r.DeviceClock
	if d == nil || d.Received == 0 {
		return "n/a\tn/a\tn/a\t"
	}
	s := d.Summary()
	return fmt.Sprintf("%s\t%s\t%d\t", micros(s.Median), micros(s.P99), r.Clock.ErrorNs)
}

func micros(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }

// WriteTable prints results as the table --sim prints, less the columns only a model
// run can measure (the poll thread's CPU and wake-ups): one row per run, named by its
// label, with the latency columns, the device-clock ones when any run has them, and lost
// (lost and late probes) of sent.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	dev := false
	for _, r := range results {
		dev = dev || r.DeviceClock != nil
	}
	head := "run\t" + LatencyHeading
	if dev {
		head += DeviceHeading
	}
	fmt.Fprintln(tw, head+"lost\tsent\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s", r.Label, LatencyCells(r))
		if dev {
			fmt.Fprint(tw, DeviceCells(r))
		}
		fmt.Fprintf(tw, "%d\t%d\t\n", r.Lost+r.Late, r.Sent)
	}
	return tw.Flush()
}
