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
			if err := d.Start(); errors.Is(err, ErrClockSync) != tt.refused {
				t.Errorf("Start: %v, refused want %v", err, tt.refused)
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
