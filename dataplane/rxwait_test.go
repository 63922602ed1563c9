package dataplane

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// TestRxWaitOnModelPorts forwards PTP Sync frames, one at a time, between two model
// 82599 ports under busy polling: every one is stamped by port 0's RX latch and counted
// in its RX wait histogram as caught by polling; other frames are not counted.
func TestRxWaitOnModelPorts(t *testing.T) {
	pair, err := intel.NewPair(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pair.Close()
	var ports [2]nic.Port
	for i := range ports {
		if ports[i], err = nic.Open(pair.Models[i].PCI(), "ixgbe", nic.Config{RxRing: 64, TxRing: 64, Promiscuous: true}); err != nil {
			t.Fatal(err)
		}
		defer ports[i].Close()
	}
	var out atomic.Int64
	pair.Far[1].SetHandler(func([]byte, int64) { out.Add(1) })
	dp, err := New(Config{Policy: idle.PolicyConfig{Mode: idle.Busy},
		Ports: []Port{{Name: "a", NIC: ports[0]}, {Name: "b", NIC: ports[1]}},
		Threads: []Thread{{CPU: -1, Queues: []Queue{
			{Name: "0to1", RxPort: ports[0], TxPort: ports[1]},
			{Name: "1to0", RxPort: ports[1], TxPort: ports[0]},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	defer dp.Stop()
	const n = 20
	src, dst := []byte{2, 0, 0, 0, 0xff, 0}, []byte{2, 0, 0, 0, 0xee, 1}
	send := func(f []byte) {
		t.Helper()
		before := out.Load()
		if err := pair.Far[0].Send(f); err != nil {
			t.Fatal(err)
		}
		if !testutil.Eventually(t, 5*time.Second, func() bool { return out.Load() > before }, "frame not forwarded") {
			t.FailNow()
		}
	}
	for seq := range n {
		f := make([]byte, nic.PTPFrameLen)
		nic.PutPTP(f, dst, src, nic.PTPSync, uint16(seq))
		send(f)
	}
	ipv4 := make([]byte, 64)
	copy(ipv4, dst)
	ipv4[12] = 0x08
	send(ipv4)
	counts := map[string]map[idle.Wake]uint64{}
	for _, s := range dp.RxWaits() {
		if counts[s.Port] == nil {
			counts[s.Port] = map[idle.Wake]uint64{}
		}
		counts[s.Port][s.Wake] = s.Count
		var inBuckets uint64
		for _, c := range s.Buckets {
			inBuckets += c
		}
		if inBuckets != s.Count || s.Lost != 0 {
			t.Errorf("%s %v: %d in buckets, count %d, lost %d", s.Port, s.Wake, inBuckets, s.Count, s.Lost)
		}
	}
	if got := counts["a"]; got[idle.WakePoll] != n || got[idle.WakeInterrupt]+got[idle.WakeTimer] != 0 {
		t.Errorf("port a waits by cause %v, want %d by poll", got, n)
	}
	if got := counts["b"]; got[idle.WakePoll]+got[idle.WakeInterrupt]+got[idle.WakeTimer] != 0 {
		t.Errorf("port b received nothing but counted %v", got)
	}
	ts, _ := nic.TimesyncOf(ports[0])
	if a := testing.AllocsPerRun(100, func() { ts.DeviceTime(); ts.RxTimestamp() }); a != 0 {
		t.Errorf("the driver's latch and clock reads allocate %v times", a)
	}
}

// fakeTimesync answers every RX latch read with the same stamp.
type fakeTimesync struct{ now int64 }

func (f *fakeTimesync) EnableTimesync() error       { return nil }
func (f *fakeTimesync) DeviceTime() (int64, error)  { return f.now, nil }
func (f *fakeTimesync) TxTimestamp() (int64, error) { return 0, nic.ErrNoTimestamp }
func (f *fakeTimesync) RxTimestamp() (nic.RxStamp, error) {
	return nic.RxStamp{Time: f.now - 1500}, nil
}

// TestRxWaitObserve checks the bucket a wait lands in and that observing allocates
// nothing.
func TestRxWaitObserve(t *testing.T) {
	pool, err := nic.NewMempool(sim.NewIOMMU(), 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	frames := []*nic.Buf{pool.Get(), pool.Get()}
	defer frames[0].Free()
	defer frames[1].Free()
	frames[1].SetRxTimestamped()
	r := &rxWait{ts: &fakeTimesync{now: 1 << 40}}
	if a := testing.AllocsPerRun(100, func() { r.observe(frames, idle.WakeInterrupt) }); a != 0 {
		t.Errorf("observe allocates %v times", a)
	}
	h := &r.h[idle.WakeInterrupt]
	if got := h.buckets[2].Load(); got != h.count.Load() || got == 0 || RxWaitBounds[2] != 2*time.Microsecond {
		t.Errorf("1.5 µs waits: bucket 2 (≤ %v) has %d of %d", RxWaitBounds[2], got, h.count.Load())
	}
	for _, tt := range []struct {
		ns   int64
		want int
	}{{0, 0}, {500, 0}, {501, 1}, {1000, 1}, {1001, 2}, {int64(time.Hour), rxWaitBuckets}} {
		var w waitHist
		w.record(tt.ns)
		if w.buckets[tt.want].Load() != 1 {
			t.Errorf("%d ns not in bucket %d", tt.ns, tt.want)
		}
	}
}
