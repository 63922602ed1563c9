package dataplane

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// RX wait: on a port with an IEEE 1588 unit (nic.Timesync), how long each frame the NIC
// stamped (a PTPv2 layer-2 Sync frame: one at a time, the latch holds one) waited between
// its arrival, by the NIC's clock, and the poll thread seeing its descriptor, read on
// the same clock — split by how the thread came to that poll (idle.Wake). It is the
// direct measure of what an idle policy costs a frame. The unit is enabled when the
// dataplane is built; ports without one cost nothing but a nil check per burst.

// rxWaitBuckets are the histogram's upper bounds: 500 ns·2^k, k = 0..21 (about 1 s),
// then +Inf.
const (
	rxWaitBuckets = 22
	rxWaitFirst   = 500 // ns
)

// RxWaitBounds are the upper bounds of RxWaitStats.Buckets (the last bucket is +Inf).
var RxWaitBounds = func() []time.Duration {
	b := make([]time.Duration, rxWaitBuckets)
	for k := range b {
		b[k] = time.Duration(rxWaitFirst << k)
	}
	return b
}()

// rxWait is one port's histograms, shared by every queue and thread that polls it.
type rxWait struct {
	port nic.Port
	ts   nic.Timesync
	name string
	h    [idle.NumWakes]waitHist
	// lost counts stamped frames whose stamp could not be read (the latch held another
	// frame's, or the clock read failed).
	lost atomic.Uint64
}

type waitHist struct {
	count, sumNs atomic.Uint64
	buckets      [rxWaitBuckets + 1]atomic.Uint64
}

// record adds one wait of ns.
func (h *waitHist) record(ns int64) {
	ns = max(ns, 0)
	k := 0
	if ns > rxWaitFirst {
		k = min(bits.Len64(uint64(ns-1)/rxWaitFirst), rxWaitBuckets)
	}
	h.buckets[k].Add(1)
	h.count.Add(1)
	h.sumNs.Add(uint64(ns))
}

// observe records the wait of every stamped frame in frames, woken as w. It allocates
// nothing.
func (r *rxWait) observe(frames []*nic.Buf, w idle.Wake) {
	for _, b := range frames {
		if !b.RxTimestamped() {
			continue
		}
		st, err := r.ts.RxTimestamp()
		if err != nil {
			r.lost.Add(1)
			continue
		}
		now, err := r.ts.DeviceTime()
		if err != nil {
			r.lost.Add(1)
			continue
		}
		r.h[w].record(now - st.Time)
	}
}

// RxWaitStats is one port's RX wait histogram for one wake cause.
type RxWaitStats struct {
	Port string
	Wake idle.Wake
	// Buckets[k] counts waits up to RxWaitBounds[k] (not cumulative); the last one,
	// beyond every bound.
	Buckets []uint64
	Count   uint64
	Sum     time.Duration
	// Lost counts, on the port (repeated for every cause), stamped frames whose stamp
	// could not be read.
	Lost uint64
}

// RxWaits returns the RX wait histograms of every port with a 1588 unit, by wake cause.
func (dp *Dataplane) RxWaits() []RxWaitStats {
	var out []RxWaitStats
	for _, r := range dp.rxWaits {
		for w := range idle.NumWakes {
			h := &r.h[w]
			s := RxWaitStats{Port: r.name, Wake: w, Count: h.count.Load(), Sum: time.Duration(h.sumNs.Load()), Lost: r.lost.Load(),
				Buckets: make([]uint64, len(h.buckets))}
			for k := range h.buckets {
				s.Buckets[k] = h.buckets[k].Load()
			}
			out = append(out, s)
		}
	}
	return out
}

// rxWaitOf returns port p's histograms, enabling its 1588 unit the first time; nil if it
// has none (or it cannot be enabled).
func (dp *Dataplane) rxWaitOf(p nic.Port, name string) *rxWait {
	for _, r := range dp.rxWaits {
		if r.port == p {
			return r
		}
	}
	ts, err := nic.TimesyncOf(p)
	if err != nil || ts.EnableTimesync() != nil {
		return nil
	}
	r := &rxWait{port: p, ts: ts, name: name}
	dp.rxWaits = append(dp.rxWaits, r)
	return r
}
