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
