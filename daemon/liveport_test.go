package daemon

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// stubPort is a nic.Port that counts its calls and whether it was used after Close.
type stubPort struct {
	calls     atomic.Int64
	closed    atomic.Bool
	afterShut atomic.Int64
	stats     nic.Stats
}

// use is one call: it takes a while (a yield), and it must not see the port closed
// at its end either.
func (p *stubPort) use() {
	p.calls.Add(1)
	if p.closed.Load() {
		p.afterShut.Add(1)
	}
	runtime.Gosched()
	if p.closed.Load() {
		p.afterShut.Add(1)
	}
}
func (p *stubPort) MAC() net.HardwareAddr           { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }
func (p *stubPort) NumRxQueues() int                { return 1 }
func (p *stubPort) NumTxQueues() int                { return 1 }
func (p *stubPort) RxBurst(int, []*nic.Buf) int     { p.use(); return 1 }
func (p *stubPort) TxBurst(_ int, b []*nic.Buf) int { p.use(); return len(b) }
func (p *stubPort) RxVector(int) *irq.Vector        { return nil }
func (p *stubPort) EnableRxInterrupt(int)           { p.use() }
func (p *stubPort) DisableRxInterrupt(int)          { p.use() }
func (p *stubPort) Link() nic.Link                  { return nic.Link{Up: true, SpeedMbps: 1000} }
func (p *stubPort) Stats() nic.Stats                { return p.stats }
func (p *stubPort) Close() error                    { p.closed.Store(true); return nil }

// TestLivePortHotPath: a present live port forwards and allocates nothing; an absent one
// moves nothing.
func TestLivePortHotPath(t *testing.T) {
	sp := &stubPort{}
	lp := newLivePort(sp)
	bufs := make([]*nic.Buf, 4)
	if n := testing.AllocsPerRun(1000, func() { lp.RxBurst(0, bufs); lp.TxBurst(0, bufs) }); n != 0 {
		t.Errorf("%v allocations per burst pair", n)
	}
	if lp.RxBurst(0, bufs) != 1 || lp.TxBurst(0, bufs) != 4 || !lp.Link().Up {
		t.Error("present: calls not forwarded")
	}
	if _, err := lp.take(); err != nil {
		t.Fatal(err)
	}
	if lp.RxBurst(0, bufs) != 0 || lp.TxBurst(0, bufs) != 0 || lp.Link().Up || lp.present() {
		t.Error("absent: a port that moves frames")
	}
	if n := testing.AllocsPerRun(1000, func() { lp.RxBurst(0, bufs); lp.TxBurst(0, bufs) }); n != 0 {
		t.Errorf("absent: %v allocations per burst pair", n)
	}
}

// TestLivePortTake: take returns only once no call is inside the port, so the port it
// returns is closed under no one, while other goroutines hammer it; Stats carries the
// taken port's counters on; put swaps a new one in; Close makes put refuse.
func TestLivePortTake(t *testing.T) {
	for round := range 20 {
		sp := &stubPort{stats: nic.Stats{RxPackets: 10}}
		lp := newLivePort(sp)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bufs := make([]*nic.Buf, 1)
				for {
					select {
					case <-stop:
						return
					default:
					}
					lp.RxBurst(0, bufs)
					lp.EnableRxInterrupt(0)
					_ = lp.Stats()
				}
			}()
		}
		for sp.calls.Load() < int64(100*(round+1)) {
		}
		p, err := lp.take()
		if err != nil || p != sp {
			t.Fatalf("take: %v, %v", p, err)
		}
		p.Close()
		close(stop)
		wg.Wait()
		if n := sp.afterShut.Load(); n != 0 {
			t.Fatalf("round %d: %d calls into the port after it was taken and closed", round, n)
		}
		next := &stubPort{stats: nic.Stats{RxPackets: 5}}
		if !lp.put(next) || lp.Stats().RxPackets != 15 {
			t.Fatalf("after put: stats %+v", lp.Stats())
		}
		if err := lp.Close(); err != nil || !next.closed.Load() || lp.put(&stubPort{}) {
			t.Fatal("Close did not close the current port, or put took one after Close")
		}
	}
}

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
