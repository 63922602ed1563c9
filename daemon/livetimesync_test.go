package daemon

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/nic"
)

// tsPort is a stubPort with a 1588 unit that counts its enables.
type tsPort struct {
	stubPort
	enables int
}

func (p *tsPort) EnableTimesync() error             { p.enables++; return nil }
func (p *tsPort) DeviceTime() (int64, error)        { return 42, nil }
func (p *tsPort) TxTimestamp() (int64, error)       { return 0, nic.ErrNoTimestamp }
func (p *tsPort) RxTimestamp() (nic.RxStamp, error) { return nic.RxStamp{Time: 7, SeqID: 3}, nil }

// TestLivePortTimesync: a live port forwards the driver port's 1588 unit without
// allocating, says so when the driver has none or the device is away, and enables the
// unit of a port put in after the device came back.
func TestLivePortTimesync(t *testing.T) {
	if _, err := (newLivePort(&stubPort{})).DeviceTime(); !errors.Is(err, nic.ErrNoTimesync) {
		t.Errorf("driver without a unit: %v, want ErrNoTimesync", err)
	}
	first := &tsPort{}
	lp := newLivePort(first)
	if err := lp.EnableTimesync(); err != nil || first.enables != 1 {
		t.Fatalf("enable: %v, %d enables", err, first.enables)
	}
	if st, err := lp.RxTimestamp(); err != nil || st.SeqID != 3 {
		t.Errorf("RxTimestamp %+v %v", st, err)
	}
	if a := testing.AllocsPerRun(100, func() { lp.RxTimestamp(); lp.DeviceTime() }); a != 0 {
		t.Errorf("%v allocations per latch and clock read", a)
	}
	if _, err := lp.take(); err != nil {
		t.Fatal(err)
	}
	if _, err := lp.DeviceTime(); !errors.Is(err, errAbsent) {
		t.Errorf("absent: %v, want errAbsent", err)
	}
	second := &tsPort{}
	if !lp.put(second) {
		t.Fatal("put refused")
	}
	if second.enables != 1 {
		t.Errorf("the re-opened port's unit enabled %d times, want 1", second.enables)
	}
	if ns, err := lp.DeviceTime(); err != nil || ns != 42 {
		t.Errorf("after put: %d %v", ns, err)
	}
}
