package latency

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/uiod/uiod/nic"
)

// DefaultMaxClockError is the largest clock synchronisation error DeviceClock accepts
// between two devices' clocks unless told otherwise.
const DefaultMaxClockError = 10_000 // ns

// clockRounds is how many times SyncClocks reads the two clocks.
const clockRounds = 32

// ClockSync is the measured offset of one device clock from another.
type ClockSync struct {
	OffsetNs int64 // rx clock − tx clock
	ErrorNs  int64 // the offset is right within ± this
}

// SyncClocks measures rx's clock against tx's as MoonGen does for two NICs (see
// SyncReaders). Both being the same unit gives offset 0, error 0.
func SyncClocks(tx, rx nic.Timesync) (ClockSync, error) {
	if tx == rx {
		return ClockSync{}, nil
	}
	return SyncReaders(tx.DeviceTime, rx.DeviceTime)
}

// SyncReaders measures clock rx against clock tx, each given by a reader in
// nanoseconds: read tx, rx, tx again, take rx − the mean of the two tx readings as the
// offset and half the time between the tx readings as its error; keep the round with
// the smallest error out of clockRounds.
func SyncReaders(tx, rx func() (int64, error)) (ClockSync, error) {
	best := ClockSync{ErrorNs: math.MaxInt64}
	for range clockRounds {
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
			best = ClockSync{OffsetNs: b - (a1 + (a2-a1)/2), ErrorNs: e}
		}
	}
	return best, nil
}

// DeviceClock collects the device-clock latency of PTP probes: the TX stamp of each
// probe on the sending port and its RX stamp on the receiving port, matched by sequence
// number, less the measured offset between the two clocks. Its methods are safe for
// concurrent use and do not allocate.
type DeviceClock struct {
	Tx, Rx nic.Timesync
	// MaxError is the clock synchronisation error Start accepts (default
	// DefaultMaxClockError ns).
	MaxError int64

	mu           sync.Mutex
	sync0, sync1 ClockSync
	at           [2][]int64  // by side (sideTx, sideRx): stamp of seq in slot seq%seqWindow
	seqOf        [2][]uint64 // seq+1 the slot's stamp belongs to
	lost         [2]uint64
	negative     uint64
	samples      uint64
	minNs, maxNs int64
	hist         *hdrhistogram.Histogram
}

// ErrClockSync is the error of clocks that cannot be synchronised well enough.
var ErrClockSync = errors.New("device clocks not synchronised")

// Start enables both units, measures the clock offset and refuses (ErrClockSync) if
// its error exceeds MaxError.
func (d *DeviceClock) Start() error {
	if d.MaxError == 0 {
		d.MaxError = DefaultMaxClockError
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
	defer d.mu.Unlock()
	d.sync0, d.sync1 = s, s
	for side := range d.at {
		d.at[side], d.seqOf[side] = make([]int64, seqWindow), make([]uint64, seqWindow)
	}
	d.minNs, d.hist = math.MaxInt64, newHistogram()
	return nil
}

// Stop measures the offset again, so that the result shows how far the clocks drifted.
func (d *DeviceClock) Stop() {
	s, err := SyncClocks(d.Tx, d.Rx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.sync1 = s
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

// match records the latency of seq once both of its stamps are in. d.mu is held.
func (d *DeviceClock) match(i, seq uint64) {
	if d.seqOf[sideTx][i] != seq+1 || d.seqOf[sideRx][i] != seq+1 {
		return
	}
	d.seqOf[sideTx][i], d.seqOf[sideRx][i] = 0, 0
	lat := d.at[sideRx][i] - d.at[sideTx][i] - d.sync0.OffsetNs
	if lat < 0 {
		d.negative++ // only within the clock error; recorded as 0
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
	drift := d.sync1.OffsetNs - d.sync0.OffsetNs
	res.DeviceClock = hw
	res.Clock = &ClockReport{
		OffsetNs: d.sync0.OffsetNs, ErrorNs: max(d.sync0.ErrorNs, d.sync1.ErrorNs) + abs(drift),
		DriftNs: drift, TxStampsLost: d.lost[sideTx], RxStampsLost: d.lost[sideRx], Negative: d.negative,
	}
}

func abs(v int64) int64 { return max(v, -v) }

// ClockReport says how a run's device-clock figures were obtained.
type ClockReport struct {
	// OffsetNs is the receiving clock's offset from the sending one, subtracted from
	// every sample; ErrorNs bounds the error of every sample from that (the worst
	// synchronisation error and the drift over the run); DriftNs is how far the offset
	// moved between the start and the end of the run.
	OffsetNs int64 `json:"offset_ns"`
	ErrorNs  int64 `json:"error_ns"`
	DriftNs  int64 `json:"drift_ns"`
	// TxStampsLost and RxStampsLost are probes whose stamp a latch did not give (it held
	// another frame's, or none came); Negative are samples below 0 by less than the
	// error, recorded as 0.
	TxStampsLost uint64 `json:"tx_stamps_lost"`
	RxStampsLost uint64 `json:"rx_stamps_lost"`
	Negative     uint64 `json:"negative"`
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
