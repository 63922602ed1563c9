package latency

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// seqWindow is how many recent sequence numbers the receiver remembers to recognise
// duplicates (26 s of probes at 400 µs, 0.65 s at 100 kpps).
const seqWindow = 1 << 16

// Histogram bounds: 1 ns to 60 s at 3 significant figures (values below 2048 ns exact).
const (
	histMin     = 1
	histMax     = int64(60e9)
	histSigFigs = 3
)

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSigFigs) }

// Receiver matches probes arriving on a wire: it records each probe's latency (arrival
// wire time − send time) in a histogram and counts late, duplicate and reordered probes.
// Its Handle method is a wire.Handler; it is safe for concurrent use and does not
// allocate.
type Receiver struct {
	start   int64 // wire time the run began; older probes are stale
	timeout int64

	foreign atomic.Uint64 // frames that are not generator frames

	mu         sync.Mutex
	seen       []uint64 // seq+1 of the probe last seen in slot seq%seqWindow
	maxSeq     uint64
	any        bool
	received   uint64
	late       uint64
	dups       uint64
	reordered  uint64
	stale      uint64
	background uint64
	minNs      int64
	maxNs      int64
	hist       *hdrhistogram.Histogram
}

// NewReceiver returns a Receiver for probes sent at or after wire time start; probes whose
// latency exceeds timeout (if > 0) count as late and are not recorded.
func NewReceiver(start, timeout int64) *Receiver {
	return &Receiver{
		start:   start,
		timeout: timeout,
		seen:    make([]uint64, seqWindow),
		minNs:   math.MaxInt64,
		hist:    newHistogram(),
	}
}

// Handle is the wire.Handler that receives probes.
func (r *Receiver) Handle(frame []byte, ts int64) {
	p, err := ParseProbe(frame)
	if err != nil {
		r.foreign.Add(1)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.SentAt < r.start {
		r.stale++ // left over from an earlier run
		return
	}
	if p.Kind == KindBackground {
		r.background++
		return
	}
	if r.any && p.Seq+seqWindow <= r.maxSeq {
		r.late++ // too old to tell a duplicate from a very late probe; late either way
		return
	}
	slot := &r.seen[p.Seq%seqWindow]
	if *slot == p.Seq+1 {
		r.dups++
		return
	}
	*slot = p.Seq + 1
	if r.any && p.Seq < r.maxSeq {
		r.reordered++
	} else {
		r.maxSeq, r.any = p.Seq, true
	}
	lat := max(ts-p.SentAt, 0)
	if r.timeout > 0 && lat > r.timeout {
		r.late++
		return
	}
	r.received++
	r.minNs = min(r.minNs, lat)
	r.maxNs = max(r.maxNs, lat)
	_ = r.hist.RecordValue(min(lat, histMax))
}

// accounted returns how many distinct probes have arrived, on time or late.
func (r *Receiver) accounted() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received + r.late
}

// fill copies the receiver's counters and a snapshot of its histogram into res and
// derives the loss from res.Sent.
func (r *Receiver) fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Received = r.received
	res.Late = r.late
	res.Duplicates = r.dups
	res.Reordered = r.reordered
	res.Stale = r.stale
	res.BackgroundReceived = r.background
	res.Foreign = r.foreign.Load()
	if seen := r.received + r.late; res.Sent > seen {
		res.Lost = res.Sent - seen
	}
	if r.received > 0 {
		res.MinNs, res.MaxNs = r.minNs, r.maxNs
	}
	res.Hist = hdrhistogram.Import(r.hist.Export())
}
