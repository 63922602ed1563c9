package daemon

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uiod/uiod/dataplane"
)

// RxWaitStatus is one port's RX wait histogram for one wake cause: on a port with an
// IEEE 1588 unit, how long each frame the NIC stamped waited between its arrival (the
// NIC's clock) and the poll thread seeing it (dataplane.RxWaits).
type RxWaitStatus struct {
	Port string `json:"port"`
	// Wake is how the thread came to the poll: poll, interrupt or timer.
	Wake       string  `json:"wake"`
	Count      uint64  `json:"count"`
	SumSeconds float64 `json:"sum_seconds"`
	// Buckets are cumulative: Count of waits up to LeSeconds (the +Inf bucket is Count).
	Buckets []RxWaitBucket `json:"buckets"`
	// Lost counts the port's stamped frames whose stamp could not be read.
	Lost uint64 `json:"stamps_lost"`
}

// RxWaitBucket is one cumulative bucket of an RxWaitStatus.
type RxWaitBucket struct {
	LeSeconds float64 `json:"le_seconds"`
	Count     uint64  `json:"count"`
}

// rxWaitStatus converts the dataplane's histograms.
func rxWaitStatus(ws []dataplane.RxWaitStats) []RxWaitStatus {
	out := []RxWaitStatus{}
	for _, w := range ws {
		s := RxWaitStatus{Port: w.Port, Wake: w.Wake.String(), Count: w.Count, SumSeconds: w.Sum.Seconds(), Lost: w.Lost}
		var cum uint64
		for k, b := range dataplane.RxWaitBounds {
			cum += w.Buckets[k]
			s.Buckets = append(s.Buckets, RxWaitBucket{LeSeconds: b.Seconds(), Count: cum})
		}
		out = append(out, s)
	}
	return out
}

var (
	mRxWait     = prometheus.NewDesc("uiod_port_rx_wait_seconds", "On ports with an IEEE 1588 unit: time from a stamped frame's arrival (NIC clock) to the poll thread seeing it, by how the thread was woken (poll, interrupt, timer).", []string{"port", "wake"}, nil)
	mRxWaitLost = prometheus.NewDesc("uiod_port_rx_wait_stamps_lost_total", "Stamped frames whose RX stamp could not be read.", portLabels, nil)
)

// collectRxWaits emits the RX wait histograms of st.
func collectRxWaits(m scrape, st Status) {
	lost := map[string]uint64{}
	for _, w := range st.RxWaits {
		b := make(map[float64]uint64, len(w.Buckets))
		for _, k := range w.Buckets {
			b[k.LeSeconds] = k.Count
		}
		m <- prometheus.MustNewConstHistogram(mRxWait, w.Count, w.SumSeconds, b, w.Port, w.Wake)
		lost[w.Port] = w.Lost
	}
	for p, n := range lost {
		m.counter(mRxWaitLost, float64(n), p)
	}
}

// Quantile is the upper bound in seconds of the bucket holding quantile q of the waits,
// +Inf beyond the last bound, NaN without samples.
func (w RxWaitStatus) Quantile(q float64) float64 {
	if w.Count == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(w.Count)))
	for _, b := range w.Buckets {
		if b.Count >= rank {
			return b.LeSeconds
		}
	}
	return math.Inf(1)
}
