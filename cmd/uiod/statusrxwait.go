package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/uiod/uiod/daemon"
)

// rxWaitReport summarises one port's RX wait histogram for one wake cause since the
// daemon started: how long frames the NIC stamped waited, on its clock, for the poll
// thread. The quantiles are bucket upper bounds (null without samples or beyond the last
// bound).
type rxWaitReport struct {
	Port       string   `json:"port"`
	Wake       string   `json:"wake"`
	Frames     uint64   `json:"frames"`
	MeanSecs   *float64 `json:"mean_seconds"`
	P50LeSecs  *float64 `json:"p50_le_seconds"`
	P99LeSecs  *float64 `json:"p99_le_seconds"`
	StampsLost uint64   `json:"stamps_lost"`
}

func newRxWaitReports(ws []daemon.RxWaitStatus) []rxWaitReport {
	var out []rxWaitReport
	finite := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	for _, w := range ws {
		r := rxWaitReport{Port: w.Port, Wake: w.Wake, Frames: w.Count, StampsLost: w.Lost,
			P50LeSecs: finite(w.Quantile(0.5)), P99LeSecs: finite(w.Quantile(0.99))}
		if w.Count > 0 {
			r.MeanSecs = finite(w.SumSeconds / float64(w.Count))
		}
		out = append(out, r)
	}
	return out
}

// writeRxWaits prints the RX wait table when any stamped frame was measured.
func (r statusReport) writeRxWaits(w io.Writer, width int) {
	t := newTextTable("PORT", "WAKE", "FRAMES#", "MEAN#", "P50≤#", "P99≤#", "LOST#")
	rows := 0
	for _, x := range r.RxWaits {
		if x.Frames == 0 {
			continue
		}
		rows++
		t.add(x.Port, x.Wake, count(x.Frames), optWait(x.MeanSecs), optWait(x.P50LeSecs), optWait(x.P99LeSecs), count(x.StampsLost))
	}
	if rows == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "rx wait since start: NIC RX stamp to the poll thread seeing the frame, on the NIC's clock")
	t.write(w, width)
}

// optWait is a wait in seconds as text, - without one (no samples, or beyond the last
// bucket bound).
func optWait(sec *float64) string {
	if sec == nil {
		return "-"
	}
	return durText(*sec).Round(100 * time.Nanosecond).String()
}
