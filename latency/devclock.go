package latency

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/uiod/uiod/nic"
)

// DefaultMaxClockError is the largest clock synchronisation error DeviceClock accepts
// between two devices' clocks unless told otherwise.
const DefaultMaxClockError = 10_000 // ns

// DefaultSyncEvery is how often DeviceClock measures the offset of two devices' clocks
// again during a run unless told otherwise.
const DefaultSyncEvery = 100 * time.Millisecond

// clockRounds is how many times SyncClocks reads the two clocks; resyncRounds how many
// times a re-synchronisation during a run does (MoonGen's libmoon takes 7 per probe).
const (
	clockRounds  = 32
	resyncRounds = 8
)

// ClockSync is the measured offset of one device clock from another.
type ClockSync struct {
	OffsetNs int64 // rx clock − tx clock
	ErrorNs  int64 // the offset is right within ± this
	// TxNs is the tx clock's time of the measurement (the mean of its two readings).
	TxNs int64
}

// SyncClocks measures rx's clock against tx's as MoonGen does for two NICs (see
// SyncReaders). Both being the same unit gives offset 0, error 0.
func SyncClocks(tx, rx nic.Timesync) (ClockSync, error) {
	return syncUnits(tx, rx, clockRounds)
}

// syncUnits is SyncClocks in rounds rounds.
func syncUnits(tx, rx nic.Timesync, rounds int) (ClockSync, error) {
	if tx == rx {
		return ClockSync{}, nil
	}
	return syncReaders(tx.DeviceTime, rx.DeviceTime, rounds)
}

// SyncReaders measures clock rx against clock tx, each given by a reader in
// nanoseconds: read tx, rx, tx again, take rx − the mean of the two tx readings as the
// offset and half the time between the tx readings as its error; keep the round with
// the smallest error out of clockRounds.
func SyncReaders(tx, rx func() (int64, error)) (ClockSync, error) {
	return syncReaders(tx, rx, clockRounds)
}

func syncReaders(tx, rx func() (int64, error), rounds int) (ClockSync, error) {
	best := ClockSync{ErrorNs: math.MaxInt64}
	for range rounds {
		a1, err := tx()
		if err != nil {
			return best, err
		}
		b, err := rx()
		if err != nil {
			return best, err
		}
		a2, err := tx()
		if err != nil {
			return best, err
		}
		if e := (a2 - a1 + 1) / 2; e < best.ErrorNs {
			mid := a1 + (a2-a1)/2
			best = ClockSync{OffsetNs: b - mid, ErrorNs: e, TxNs: mid}
		}
	}
	return best, nil
}

// DeviceClock collects the device-clock latency of PTP probes: the TX stamp of each
// probe on the sending port and its RX stamp on the receiving port, matched by sequence
// number, less the offset between the two clocks at the probe's TX time. Two devices'
// clocks drift apart (each crystal within ±100 ppm), so the offset is measured at Start,
// every SyncEvery during the run and at Stop, and each probe's is interpolated between
// the measurements around its TX stamp (MoonGen measures it before every probe); a probe
// waits for the next measurement before it is recorded. Its methods are safe for
// concurrent use; TxStamp and RxStamp do not allocate.
type DeviceClock struct {
	Tx, Rx nic.Timesync
	// MaxError is the clock synchronisation error Start accepts (default
	// DefaultMaxClockError ns); a measurement during the run with a larger one is not
	// used.
	MaxError int64
	// SyncEvery is how often the offset is measured during the run (default
	// DefaultSyncEvery; negative: only at Start and Stop).
	SyncEvery time.Duration

	mu                            sync.Mutex
	syncs                         []ClockSync // the measurements used, in TxNs order
	rejected                      uint64      // measurements during the run whose error was over MaxError
	pending                       []pendingSample
	at                            [2][]int64  // by side (sideTx, sideRx): stamp of seq in slot seq%seqWindow
	seqOf                         [2][]uint64 // seq+1 the slot's stamp belongs to
	lost                          [2]uint64
	negative, below, extrapolated uint64
	samples                       uint64
	minNs, maxNs                  int64
	hist                          *hdrhistogram.Histogram

	stop chan struct{}
	done chan struct{}
}

// pendingSample is a probe's two stamps, waiting for the offset measurement after it.
type pendingSample struct{ tx, rx int64 }

// maxPending is how many probes wait for the next offset measurement; beyond it a
// probe's offset is extrapolated from the last two.
const maxPending = 1 << 14

// ErrClockSync is the error of clocks that cannot be synchronised well enough.
var ErrClockSync = errors.New("device clocks not synchronised")

// Start enables both units, measures the clock offset, refuses (ErrClockSync) if its
// error exceeds MaxError and, for two units, starts measuring it every SyncEvery.
func (d *DeviceClock) Start() error {
	if d.MaxError == 0 {
		d.MaxError = DefaultMaxClockError
	}
	if d.SyncEvery == 0 {
		d.SyncEvery = DefaultSyncEvery
	}
	for _, u := range []nic.Timesync{d.Tx, d.Rx} {
		if err := u.EnableTimesync(); err != nil {
			return fmt.Errorf("enable timestamps: %w", err)
		}
	}
	s, err := SyncClocks(d.Tx, d.Rx)
	if err != nil {
		return fmt.Errorf("read device clocks: %w", err)
	}
	if s.ErrorNs > d.MaxError {
		return fmt.Errorf("the receiving port's clock is known only within ±%d ns of the sender's (reading both %d times), more than the %d ns allowed: %w", s.ErrorNs, clockRounds, d.MaxError, ErrClockSync)
	}
	d.mu.Lock()
	d.syncs = append(make([]ClockSync, 0, 64), s)
	d.pending = make([]pendingSample, 0, maxPending)
	for side := range d.at {
		d.at[side], d.seqOf[side] = make([]int64, seqWindow), make([]uint64, seqWindow)
	}
	d.minNs, d.hist = math.MaxInt64, newHistogram()
	d.mu.Unlock()
	if d.Tx != d.Rx && d.SyncEvery > 0 {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
		go d.resyncLoop(d.stop, d.done)
	}
	return nil
}

// resyncLoop measures the offset every SyncEvery until stop closes.
func (d *DeviceClock) resyncLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(d.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.resync(resyncRounds)
		}
	}
}

// resync measures the offset in rounds rounds and, if it is good enough, records the
// probes waiting for it.
func (d *DeviceClock) resync(rounds int) {
	s, err := syncUnits(d.Tx, d.Rx, rounds)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil || s.ErrorNs > d.MaxError {
		d.rejected++
		return
	}
	if n := len(d.syncs); n > 0 && s.TxNs <= d.syncs[n-1].TxNs {
		return // the same instant again (one unit, or a clock that stood still)
	}
	d.syncs = append(d.syncs, s)
	d.flush(false)
}

// Stop stops the measurements during the run, measures the offset once more and
// records every probe still waiting for it.
func (d *DeviceClock) Stop() {
	d.halt()
	if d.Tx != d.Rx {
		d.resync(clockRounds)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flush(true)
}

// halt stops the measurements during the run (if they run), from the goroutine that
// called Start.
func (d *DeviceClock) halt() {
	if d.stop != nil {
		close(d.stop)
		<-d.done
		d.stop = nil
	}
}

// TxStamp records probe seq's TX stamp, or that it was lost (err != nil).
func (d *DeviceClock) TxStamp(seq uint64, at int64, err error) {
	d.stamp(sideTx, seq, at, err)
}

// RxStamp records probe seq's RX stamp, or that it was lost.
func (d *DeviceClock) RxStamp(seq uint64, at int64, err error) {
	d.stamp(sideRx, seq, at, err)
}

// Sides of a probe's stamps.
const (
	sideTx = iota
	sideRx
)

// stamp records one side's stamp of seq, or counts it lost.
func (d *DeviceClock) stamp(side int, seq uint64, at int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil || d.at[side] == nil {
		d.lost[side]++
		return
	}
	i := seq % seqWindow
	d.at[side][i], d.seqOf[side][i] = at, seq+1
	d.match(i, seq)
}

// match queues seq's stamps once both are in, for the next offset measurement (one
// unit: recorded at once, the offset is 0). d.mu is held.
func (d *DeviceClock) match(i, seq uint64) {
	if d.seqOf[sideTx][i] != seq+1 || d.seqOf[sideRx][i] != seq+1 {
		return
	}
	d.seqOf[sideTx][i], d.seqOf[sideRx][i] = 0, 0
	p := pendingSample{d.at[sideTx][i], d.at[sideRx][i]}
	switch {
	case d.Tx == d.Rx:
		d.record(p.rx-p.tx, 0)
	case len(d.pending) == cap(d.pending):
		d.extrapolated++
		off, e := d.offsetAt(p.tx)
		d.record(p.rx-p.tx-off, e)
	default:
		d.pending = append(d.pending, p)
	}
}

// flush records the waiting probes whose TX stamp the measurements now bracket (all of
// them when final). d.mu is held.
func (d *DeviceClock) flush(final bool) {
	last := d.syncs[len(d.syncs)-1].TxNs
	kept := d.pending[:0]
	for _, p := range d.pending {
		if p.tx > last && !final {
			kept = append(kept, p)
			continue
		}
		if p.tx > last {
			d.extrapolated++
		}
		off, e := d.offsetAt(p.tx)
		d.record(p.rx-p.tx-off, e)
	}
	d.pending = kept
}

// offsetAt is the offset at tx time tx, interpolated between the measurements around
// it (extrapolated from the nearest two outside them), and its error. d.mu is held.
func (d *DeviceClock) offsetAt(tx int64) (off, errNs int64) {
	s := d.syncs
	if len(s) == 1 {
		return s[0].OffsetNs, s[0].ErrorNs
	}
	k := sort.Search(len(s), func(k int) bool { return s[k].TxNs >= tx }) // s[k-1] < tx ≤ s[k]
	k = min(max(k, 1), len(s)-1)
	a, b := s[k-1], s[k]
	off = a.OffsetNs + int64(float64(b.OffsetNs-a.OffsetNs)*(float64(tx-a.TxNs)/float64(b.TxNs-a.TxNs)))
	return off, max(a.ErrorNs, b.ErrorNs)
}

// record adds one latency lat known within ±errNs: below 0 within the error it is
// recorded as 0 and counted Negative; further below it cannot be, and is counted only.
// d.mu is held.
func (d *DeviceClock) record(lat, errNs int64) {
	if lat < 0 {
		if -lat > errNs {
			d.below++
			return
		}
		d.negative++
		lat = 0
	}
	d.samples++
	d.minNs, d.maxNs = min(d.minNs, lat), max(d.maxNs, lat)
	_ = d.hist.RecordValue(max(min(lat, histMax), histMin))
}

// fill sets res.DeviceClock from what was collected.
func (d *DeviceClock) fill(res *Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hw := &Result{Label: res.Label + " (device clock)", Pattern: res.Pattern, Elapsed: res.Elapsed, Sent: res.Sent, Received: d.samples}
	if res.Sent > d.samples {
		hw.Lost = res.Sent - d.samples
	}
	if d.samples > 0 {
		hw.MinNs, hw.MaxNs = d.minNs, d.maxNs
	}
	hw.Hist = hdrhistogram.Import(d.hist.Export())
	res.DeviceClock = hw
	first, last := d.syncs[0], d.syncs[len(d.syncs)-1]
	c := &ClockReport{
		OffsetNs: first.OffsetNs, DriftNs: last.OffsetNs - first.OffsetNs, Syncs: len(d.syncs), SyncsRejected: d.rejected,
		TxStampsLost: d.lost[sideTx], RxStampsLost: d.lost[sideRx], Negative: d.negative, BelowError: d.below, Extrapolated: d.extrapolated,
	}
	if dt := last.TxNs - first.TxNs; dt > 0 {
		c.DriftPPM = float64(c.DriftNs) / float64(dt) * 1e6
	}
	// The error: the worst measurement's, and how far any measurement lies off the line
	// through its neighbours (what interpolating between them cannot follow).
	for k, s := range d.syncs {
		c.ErrorNs = max(c.ErrorNs, s.ErrorNs)
		if k > 0 && k < len(d.syncs)-1 {
			a, b := d.syncs[k-1], d.syncs[k+1]
			line := a.OffsetNs + int64(float64(b.OffsetNs-a.OffsetNs)*(float64(s.TxNs-a.TxNs)/float64(b.TxNs-a.TxNs)))
			c.Nonlinear = max(c.Nonlinear, abs(s.OffsetNs-line))
		}
	}
	c.ErrorNs += c.Nonlinear
	res.Clock = c
}

func abs(v int64) int64 { return max(v, -v) }

// ClockReport says how a run's device-clock figures were obtained.
type ClockReport struct {
	// OffsetNs is the receiving clock's offset from the sending one at the start;
	// DriftNs how far it moved by the end of the run, and DriftPPM that as a rate (the
	// two clocks' frequency difference, in parts per million of the sender's). Each
	// sample has the offset interpolated at its TX time between the Syncs measurements
	// (SyncsRejected more were too imprecise to use) subtracted.
	OffsetNs      int64   `json:"offset_ns"`
	DriftNs       int64   `json:"drift_ns"`
	DriftPPM      float64 `json:"drift_ppm"`
	Syncs         int     `json:"syncs"`
	SyncsRejected uint64  `json:"syncs_rejected"`
	// ErrorNs bounds the error of every sample from the offset: the worst
	// measurement's error plus Nonlinear, the furthest any measurement lay off the line
	// through its neighbours (the drift changing faster than the interpolation follows).
	ErrorNs   int64 `json:"error_ns"`
	Nonlinear int64 `json:"nonlinear_ns"`
	// TxStampsLost and RxStampsLost are probes whose stamp a latch did not give (it held
	// another frame's, or none came); Negative are samples below 0 by less than the
	// error, recorded as 0; BelowError samples further below 0 than the error allows,
	// which are not recorded (the clocks were not where the measurements put them);
	// Extrapolated samples whose offset was extrapolated beyond the measurements.
	TxStampsLost uint64 `json:"tx_stamps_lost"`
	RxStampsLost uint64 `json:"rx_stamps_lost"`
	Negative     uint64 `json:"negative"`
	BelowError   uint64 `json:"below_error"`
	Extrapolated uint64 `json:"extrapolated"`
}

// WithDeviceClock returns results with each one's device-clock result after it, for
// the CSV and the plot, where each is a labelled series of its own.
func WithDeviceClock(results []*Result) []*Result {
	out := make([]*Result, 0, 2*len(results))
	for _, r := range results {
		out = append(out, r)
		if r.DeviceClock != nil {
			out = append(out, r.DeviceClock)
		}
	}
	return out
}
