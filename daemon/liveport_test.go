package daemon

import (
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// stubPort is a nic.Port that counts its calls and whether it was used after Close.
type stubPort struct {
	calls     atomic.Int64
	closed    atomic.Bool
	afterShut atomic.Int64
	stats     nic.Stats
	empty     bool // RxBurst receives nothing (a port a dataplane polls)
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
func (p *stubPort) MAC() net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }
func (p *stubPort) NumRxQueues() int      { return 1 }
func (p *stubPort) NumTxQueues() int      { return 1 }
func (p *stubPort) RxBurst(int, []*nic.Buf) int {
	p.use()
	if p.empty {
		return 0
	}
	return 1
}
func (p *stubPort) TxBurst(_ int, b []*nic.Buf) int { p.use(); return len(b) }
func (p *stubPort) RxVector(int) *irq.Vector        { p.use(); return nil }
func (p *stubPort) EnableRxInterrupt(int)           { p.use() }
func (p *stubPort) DisableRxInterrupt(int)          { p.use() }
func (p *stubPort) Link() nic.Link                  { p.use(); return nic.Link{Up: true, SpeedMbps: 1000} }
func (p *stubPort) Stats() nic.Stats                { p.use(); return p.stats }
func (p *stubPort) Close() error                    { p.closed.Store(true); return nil }

// macPort is a stubPort whose MAC changes after Open, as a VF's does when its PF answers
// only later.
type macPort struct {
	stubPort
	mac atomic.Pointer[net.HardwareAddr]
}

func (p *macPort) MAC() net.HardwareAddr { return *p.mac.Load() }

// TestLivePortMAC: the live port's MAC is the driver's current one while it is in, and
// the one it was opened with while absent. On the old code: always the one it was
// opened with (a VF opened with its PF down kept its random placeholder in /status).
func TestLivePortMAC(t *testing.T) {
	first, later := net.HardwareAddr{0x72, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0x75, 0x69, 0x6f, 0x64, 2}
	mp := &macPort{}
	mp.mac.Store(&first)
	lp := newLivePort(mp)
	mp.mac.Store(&later)
	if got := lp.MAC(); got.String() != later.String() {
		t.Errorf("present: MAC %s, want the driver's %s", got, later)
	}
	if _, err := lp.take(); err != nil {
		t.Fatal(err)
	}
	if got := lp.MAC(); got.String() != first.String() {
		t.Errorf("absent: MAC %s, want the one opened with, %s", got, first)
	}
}

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

// TestLivePortTake: take returns only once no control-plane call (Stats, Link,
// RxVector: /status, /metrics, idler rebuilds) is inside the port, so the port it
// returns is closed under no one, while other goroutines hammer it; Stats carries the
// taken port's counters on; put swaps a new one in; Close makes put refuse. The hot
// path's calls are the poll threads', which take never overlaps
// (TestLivePortTakeBetweenTurns).
func TestLivePortTake(t *testing.T) {
	for round := range 20 {
		sp := &stubPort{stats: nic.Stats{RxPackets: 10}}
		lp := newLivePort(sp)
		stop := hammer(3, func() bool {
			_ = lp.Stats()
			_ = lp.Link()
			_ = lp.RxVector(0)
			return true
		})
		for sp.calls.Load() < int64(100*(round+1)) {
		}
		p, err := lp.take()
		if err != nil || p != sp {
			t.Fatalf("take: %v, %v", p, err)
		}
		p.Close()
		stop()
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

// TestLivePortTakeBetweenTurns: a poll thread bursts on the live port without a count
// or a locked instruction, so take is safe only while the dataplane holds its threads
// between turns (removePort's dataplane.Exclusive): taken and closed there, with status
// calls going on, the port sees no call after its Close, and the thread goes on polling
// the absent port.
func TestLivePortTakeBetweenTurns(t *testing.T) {
	for _, pol := range []idle.PolicyConfig{
		{Mode: idle.Busy},
		{Mode: idle.SleepRange, SleepMin: 10 * time.Microsecond, SleepMax: 50 * time.Microsecond},
	} {
		t.Run(pol.Mode.String(), func(t *testing.T) {
			sp := &stubPort{empty: true}
			lp := newLivePort(sp)
			dp, err := dataplane.New(dataplane.Config{App: dataplane.L2Fwd, Policy: pol, Threads: []dataplane.Thread{
				{CPU: -1, Queues: []dataplane.Queue{{Name: "p/rx0", RxPort: lp, TxPort: lp}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			dp.Start()
			t.Cleanup(dp.Stop)
			stop := hammer(1, func() bool {
				_ = lp.Stats()
				_ = lp.Link()
				return true
			})
			testutil.Eventually(t, 10*time.Second, func() bool { return sp.calls.Load() > 1000 }, "the poll thread polls the port")
			var took nic.Port
			if err := dp.Exclusive(func() {
				took, err = lp.take()
				if err == nil && took != nil {
					err = took.Close()
				}
			}); err != nil || took != sp {
				t.Fatalf("take in Exclusive: %v, %v", took, err)
			}
			stats := dp.Stats()
			testutil.Eventually(t, 10*time.Second, func() bool {
				return dataplaneTurns(dp.Stats()) > dataplaneTurns(stats)+100
			}, "the poll thread polls the absent port")
			stop()
			if n := sp.afterShut.Load(); n != 0 {
				t.Fatalf("%d calls into the port after it was taken and closed", n)
			}
		})
	}
}

// dataplaneTurns is the polls of every queue in s.
func dataplaneTurns(s []dataplane.QueueStats) uint64 {
	var n uint64
	for _, q := range s {
		n += q.Polls
	}
	return n
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

// nopPort is a present port whose bursts do nothing: what the live port adds is all the
// benchmark sees.
type nopPort struct{ stubPort }

func (*nopPort) RxBurst(int, []*nic.Buf) int     { return 0 }
func (*nopPort) TxBurst(_ int, b []*nic.Buf) int { return len(b) }

// BenchmarkLivePortBurst is one RX and one TX burst through a live port in front of a
// port that does nothing (docs/design.md §15: what a removable port costs a burst).
func BenchmarkLivePortBurst(b *testing.B) {
	lp := newLivePort(&nopPort{})
	bufs := make([]*nic.Buf, 32)
	for b.Loop() {
		lp.RxBurst(0, bufs)
		lp.TxBurst(0, bufs)
	}
}

// recoverStub is a stubPort that asks for Recover (nic.Recoverer) and counts its runs.
type recoverStub struct {
	stubPort
	needs    nic.RecoverSignal
	recovers atomic.Int64
}

func (p *recoverStub) OnRecoverNeeded(f func()) { p.needs.Set(f) }
func (p *recoverStub) Recover() error           { p.recovers.Add(1); p.needs.Clear(); return nil }
func (p *recoverStub) RecoverBackoff() (first, max time.Duration) {
	return time.Millisecond, time.Millisecond
}

// TestLivePortPassesRecover checks that the live port passes a driver's Recover through:
// the dataplane's function reaches the driver's port, and a re-opened one; a need raised
// while the port was absent is told when it is back; Recover runs on the port present,
// and on an absent one or one that is no Recoverer does nothing.
func TestLivePortPassesRecover(t *testing.T) {
	first := &recoverStub{}
	lp := newLivePort(first)
	var asked atomic.Int64
	lp.OnRecoverNeeded(func() { asked.Add(1) })
	first.needs.Raise()
	if asked.Load() != 1 {
		t.Fatalf("the driver's request reached the live port's user %d times, want 1", asked.Load())
	}
	if err := lp.Recover(); err != nil || first.recovers.Load() != 1 {
		t.Fatalf("Recover %v, driver's Recover ran %d times, want once", err, first.recovers.Load())
	}
	if _, err := lp.take(); err != nil {
		t.Fatal(err)
	}
	if err := lp.Recover(); err != nil {
		t.Fatalf("Recover of an absent port: %v", err)
	}
	second := &recoverStub{}
	second.needs.Raise() // e.g. an igbvf port re-opened with its PF down
	if !lp.put(second) {
		t.Fatal("put refused")
	}
	if asked.Load() != 2 {
		t.Fatalf("the re-opened port's pending request reached the user %d times in all, want 2", asked.Load())
	}
	if err := lp.Recover(); err != nil || second.recovers.Load() != 1 || first.recovers.Load() != 1 {
		t.Fatalf("Recover %v ran on the re-opened port %d times and on the first %d: want 1, 1", err, second.recovers.Load(), first.recovers.Load())
	}
	if f, m := lp.RecoverBackoff(); f != time.Millisecond || m != time.Millisecond {
		t.Errorf("backoff %v, %v: want the driver's", f, m)
	}
	plain := newLivePort(&stubPort{})
	plain.OnRecoverNeeded(func() { t.Error("a port that is no Recoverer asked for Recover") })
	if err := plain.Recover(); err != nil {
		t.Errorf("Recover of a port that is no Recoverer: %v", err)
	}
}

// TestLivePortRecoverByDataplane runs a live port over a driver's port that asks for
// Recover in a dataplane: the dataplane sees the request through the wrapper and runs the
// driver's Recover.
func TestLivePortRecoverByDataplane(t *testing.T) {
	drv := &recoverStub{stubPort: stubPort{empty: true}}
	lp := newLivePort(drv)
	dp, err := dataplane.New(dataplane.Config{App: dataplane.Reflect, Policy: idle.PolicyConfig{Mode: idle.Busy},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{Name: "a", RxPort: lp}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	defer dp.Stop()
	drv.needs.Raise()
	if !testutil.WaitFor(10*time.Second, func() bool { return drv.recovers.Load() == 1 }) {
		t.Fatalf("the driver's Recover ran %d times, want once", drv.recovers.Load())
	}
}
