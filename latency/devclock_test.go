package latency

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/nic"
)

// stepClock is a device clock that advances step ns at every read, offset ns from the
// shared count.
type stepClock struct {
	n            *int64
	step, offset int64
}

func (c stepClock) EnableTimesync() error { return nil }
func (c stepClock) DeviceTime() (int64, error) {
	*c.n += c.step
	return *c.n + c.offset, nil
}
func (c stepClock) TxTimestamp() (int64, error)       { return 0, nic.ErrNoTimestamp }
func (c stepClock) RxTimestamp() (nic.RxStamp, error) { return nic.RxStamp{}, nic.ErrNoTimestamp }

// TestDeviceClockSync: the offset of two clocks read in turn, its error half the time
// between the two reads of the sender's, and a run refused when that error exceeds the
// limit; one clock against itself is exact.
func TestDeviceClockSync(t *testing.T) {
	for _, tt := range []struct {
		name         string
		step, offset int64
		wantErr      int64
		refused      bool
	}{
		{"fast reads", 100, 5000, 100, false},
		{"slow reads", 30_000, -7000, 30_000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n int64
			tx, rx := stepClock{&n, tt.step, 0}, stepClock{&n, tt.step, tt.offset}
			s, err := SyncClocks(tx, rx)
			if err != nil {
				t.Fatal(err)
			}
			if s.OffsetNs != tt.offset || s.ErrorNs != tt.wantErr {
				t.Errorf("offset %d ± %d, want %d ± %d", s.OffsetNs, s.ErrorNs, tt.offset, tt.wantErr)
			}
			d := &DeviceClock{Tx: tx, Rx: rx}
			err = d.Start()
			if errors.Is(err, ErrClockSync) != tt.refused {
				t.Errorf("Start: %v, refused want %v", err, tt.refused)
			}
			if err == nil {
				d.halt()
			}
		})
	}
	var n int64
	c := stepClock{&n, 1000, 0}
	if s, err := SyncClocks(c, c); err != nil || s != (ClockSync{}) {
		t.Errorf("one clock against itself: %+v %v", s, err)
	}
}

// TestSyncReaders: of the rounds tx, rx, tx, the one with the tightest pair of tx readings
// gives the offset (rx − their mean) and the error (half their gap); a reader's error
// ends the measurement.
func TestSyncReaders(t *testing.T) {
	bad := errors.New("read failed")
	for _, tt := range []struct {
		name             string
		tx, rx           []int64 // readings in turn; tx has two per round, rx one
		failAt           int     // the read of rx that fails (-1: none)
		wantOff, wantErr int64
	}{
		// rounds: tx 0,100 rx 1050 → 1000 ± 50; tx 200,220 rx 1210 → 1000 ± 10
		{"tightest round wins", []int64{0, 100, 200, 220}, []int64{1050, 1210}, -1, 1000, 10},
		{"negative offset", []int64{1000, 1002}, []int64{-4000}, -1, -5001, 1},
		{"rx fails", []int64{0, 10}, []int64{5}, 0, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ti, ri int
			tx := func() (int64, error) {
				v := tt.tx[ti%len(tt.tx)] + int64(ti/len(tt.tx))*1_000_000 // later rounds repeat, no tighter
				ti++
				return v, nil
			}
			rx := func() (int64, error) {
				if ri == tt.failAt {
					return 0, bad
				}
				v := tt.rx[ri%len(tt.rx)] + int64(ri/len(tt.rx))*1_000_000
				ri++
				return v, nil
			}
			s, err := SyncReaders(tx, rx)
			if tt.failAt >= 0 {
				if !errors.Is(err, bad) {
					t.Fatalf("err %v, want %v", err, bad)
				}
				return
			}
			if err != nil || s.OffsetNs != tt.wantOff || s.ErrorNs != tt.wantErr {
				t.Errorf("%d ± %d (%v), want %d ± %d", s.OffsetNs, s.ErrorNs, err, tt.wantOff, tt.wantErr)
			}
		})
	}
}

// simClock is a device clock on a simulated time base: ppm fast and offset ns ahead of
// it; every read takes step ns of simulated time.
type simClock struct {
	now          *int64
	ppm          float64
	offset, step int64
}

func (c simClock) at(t int64) int64 { return int64(float64(t)*(1+c.ppm/1e6)) + c.offset }

func (c simClock) EnableTimesync() error { return nil }
func (c simClock) DeviceTime() (int64, error) {
	*c.now += c.step
	return c.at(*c.now), nil
}
func (c simClock) TxTimestamp() (int64, error)       { return 0, nic.ErrNoTimestamp }
func (c simClock) RxTimestamp() (nic.RxStamp, error) { return nic.RxStamp{}, nic.ErrNoTimestamp }

// TestDeviceClockDrift: 1000 probes of a constant 5 µs path over 10 s between two
// clocks ±100 ppm apart (IEEE 802.3's crystal tolerance), the offset measured every
// 100 ms: every sample is 5 µs within the reported error, which stays at the
// measurements' own (a few hundred ns, not the 1 ms the clocks drift apart), and the
// report gives the drift in ppm. With the offset measured once, +100 ppm read 505 µs at
// the median and −100 ppm 1 ns, 996 samples clamped from below 0.
func TestDeviceClockDrift(t *testing.T) {
	const path = 5000 // ns
	for _, ppm := range []float64{0, 100, -100} {
		var now int64
		tx := simClock{now: &now, step: 100}
		rx := simClock{now: &now, ppm: ppm, offset: 123_456_789, step: 100}
		d := &DeviceClock{Tx: tx, Rx: rx, SyncEvery: -1}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		for i := range int64(1000) {
			now = max(now, i*10_000_000)
			d.TxStamp(uint64(i), tx.at(now), nil)
			d.RxStamp(uint64(i), rx.at(now+path), nil)
			if i%10 == 9 {
				d.resync(resyncRounds)
			}
		}
		now += 10_000_000
		d.Stop()
		res := &Result{Sent: 1000}
		d.fill(res)
		hw, c := res.DeviceClock, res.Clock
		p50 := hw.Summary().Median
		t.Logf("ppm %+g: min %d max %d p50 %d ns; error ±%d ns, drift %d ns = %.3f ppm over %d syncs", ppm, hw.MinNs, hw.MaxNs, p50, c.ErrorNs, c.DriftNs, c.DriftPPM, c.Syncs)
		if hw.Received != 1000 || c.Negative != 0 || c.BelowError != 0 || c.Extrapolated != 0 {
			t.Errorf("ppm %+g: %d samples, %d negative, %d below the error, %d extrapolated; want 1000, 0, 0, 0", ppm, hw.Received, c.Negative, c.BelowError, c.Extrapolated)
		}
		if c.ErrorNs > 1000 {
			t.Errorf("ppm %+g: error ±%d ns, want the measurements' own (under 1 µs)", ppm, c.ErrorNs)
		}
		for what, v := range map[string]int64{"min": hw.MinNs, "max": hw.MaxNs, "p50": p50} {
			// the histogram keeps 3 significant figures
			if v < path-c.ErrorNs-10 || v > path+c.ErrorNs+10 {
				t.Errorf("ppm %+g: %s %d ns, want %d ± %d", ppm, what, v, path, c.ErrorNs)
			}
		}
		if c.DriftPPM < ppm-0.1 || c.DriftPPM > ppm+0.1 {
			t.Errorf("drift %.3f ppm, want %+g", c.DriftPPM, ppm)
		}
	}
}

// TestDeviceClockBelowError: a sample below 0 within the error is recorded as 0 and
// counted Negative; one further below is counted BelowError and not recorded.
func TestDeviceClockBelowError(t *testing.T) {
	var now int64
	tx, rx := simClock{now: &now, step: 100}, simClock{now: &now, step: 100, offset: 1000}
	d := &DeviceClock{Tx: tx, Rx: rx, SyncEvery: -1}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	now = 1_000_000
	d.TxStamp(1, tx.at(now), nil)
	d.RxStamp(1, rx.at(now-50), nil) // −50 ns: within the ±100 ns error
	d.TxStamp(2, tx.at(now), nil)
	d.RxStamp(2, rx.at(now-5000), nil) // −5 µs: impossible
	d.TxStamp(3, tx.at(now), nil)
	d.RxStamp(3, rx.at(now+700), nil)
	now += 1_000_000
	d.Stop()
	res := &Result{Sent: 3}
	d.fill(res)
	if c := res.Clock; res.DeviceClock.Received != 2 || c.Negative != 1 || c.BelowError != 1 {
		t.Errorf("%d samples, %d negative, %d below the error; want 2, 1, 1 (error ±%d)", res.DeviceClock.Received, c.Negative, c.BelowError, c.ErrorNs)
	}
}
