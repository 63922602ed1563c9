package latency

import (
	"net"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// fakeLatch is a one-deep RX latch: a frame arriving while it is empty is stamped.
type fakeLatch struct {
	full bool
	st   nic.RxStamp
}

func (l *fakeLatch) EnableTimesync() error       { return nil }
func (l *fakeLatch) DeviceTime() (int64, error)  { return 0, nil }
func (l *fakeLatch) TxTimestamp() (int64, error) { return 0, nic.ErrNoTimestamp }
func (l *fakeLatch) RxTimestamp() (nic.RxStamp, error) {
	if !l.full {
		return nic.RxStamp{}, nic.ErrNoTimestamp
	}
	l.full = false
	return l.st, nil
}

// probeBufs is a pool of n buffers (closed when the test ends) and a probe template.
func probeBufs(t *testing.T, n int) (*nic.Mempool, *ptpTemplate) {
	t.Helper()
	pool, err := nic.NewMempool(sim.NewIOMMU(), n, 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	tmpl, err := newPTPTemplate(DefaultAddrs(), MinPTPFrameSize, KindProbe)
	if err != nil {
		t.Fatal(err)
	}
	return pool, tmpl
}

// TestNICWireRxStamps plays frames arriving at a one-latch NIC and being seen by the
// wire's poll, in the orders that lose stamps: every probe gets its own stamp or is
// counted lost, never another frame's, and a foreign PTP Sync (another grandmaster on
// the LAN) or a stamp read ahead of its frame costs no probe. Each probe arrives at
// 1000·seq and was sent 500 ns before: a probe recorded with another frame's stamp shows
// as a latency other than 500.
func TestNICWireRxStamps(t *testing.T) {
	pool, tmpl := probeBufs(t, 16)
	type step struct {
		arrive bool   // a frame arrives (else the oldest one that arrived is seen)
		seq    uint16 // its PTP sequence id
		probe  bool   // one of ours (else another node's Sync)
		drop   bool   // the NIC stamps it and drops it: never seen
	}
	arrive := func(seq uint16) step { return step{arrive: true, seq: seq, probe: true} }
	foreign := func(seq uint16) step { return step{arrive: true, seq: seq} }
	seen := step{}
	for _, tt := range []struct {
		name              string
		steps             []step
		wantSamples, lost uint64
	}{
		{"one probe", []step{arrive(1), seen}, 1, 0},
		{"foreign sync seen before the probe arrives", []step{foreign(1), seen, arrive(1), seen}, 1, 0},
		{"foreign sync with another seq", []step{foreign(77), seen, arrive(2), seen, arrive(3), seen}, 2, 0},
		{"second probe while the latch is full", []step{arrive(1), arrive(2), seen, seen}, 1, 1},
		// 2 arrives unstamped; 1 is seen (latch freed); 3 is stamped; 2 is seen: the latch
		// holds 3's stamp, which 3 gets.
		{"stamp read ahead of its frame", []step{arrive(1), arrive(2), seen, arrive(3), seen, seen}, 2, 1},
		// 9 is stamped and dropped; 1 arrives unstamped; when 1 is seen, 9's stamp is
		// parked; 2 is stamped and gets its own, not 9's.
		{"stamped frame dropped", []step{{arrive: true, seq: 9, probe: true, drop: true}, arrive(1), seen, arrive(2), seen}, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			latch := &fakeLatch{}
			d := &DeviceClock{Tx: latch, Rx: latch}
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			w := &NICWire{ts: latch}
			w.stamps.Store(d)
			var queue []*nic.Buf
			for i, s := range tt.steps {
				if !s.arrive {
					b := queue[0]
					queue = queue[1:]
					w.deliver(b, 0)
					b.Free()
					continue
				}
				now := int64(1000 * (i + 1))
				b := pool.Get()
				if s.probe {
					b.SetLen(copy(b.Data(), tmpl.stampFlow(uint64(s.seq), 0, 0)))
					d.TxStamp(uint64(s.seq), now-500, nil)
				} else {
					b.SetLen(nic.PutPTP(b.Data(), DefaultAddrs().DstMAC, net.HardwareAddr{2, 0, 0, 0, 0, 0x77}, nic.PTPSync, s.seq))
				}
				if !latch.full {
					latch.full, latch.st = true, nic.RxStamp{Time: now, SeqID: s.seq}
					b.SetRxTimestamped()
				}
				if s.drop {
					b.Free()
					continue
				}
				queue = append(queue, b)
			}
			for _, b := range queue {
				b.Free()
			}
			d.Stop()
			res := &Result{}
			d.fill(res)
			if got := res.DeviceClock.Received; got != tt.wantSamples || res.Clock.RxStampsLost != tt.lost {
				t.Errorf("%d samples, %d rx stamps lost; want %d, %d", got, res.Clock.RxStampsLost, tt.wantSamples, tt.lost)
			}
			if res.DeviceClock.Received > 0 && (res.DeviceClock.MinNs != 500 || res.DeviceClock.MaxNs != 500) {
				t.Errorf("latencies %d..%d ns, want 500 (a probe got another frame's stamp)", res.DeviceClock.MinNs, res.DeviceClock.MaxNs)
			}
		})
	}
}

// TestNICWireRxStampAllocs: taking a probe's RX stamp, freeing the latch of another
// node's Sync and counting an unstamped probe allocate nothing.
func TestNICWireRxStampAllocs(t *testing.T) {
	pool, tmpl := probeBufs(t, 4)
	latch := &fakeLatch{}
	d := &DeviceClock{Tx: latch, Rx: latch}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	w := &NICWire{ts: latch}
	w.stamps.Store(d)
	probe, foreign, unstamped := pool.Get(), pool.Get(), pool.Get()
	defer probe.Free()
	defer foreign.Free()
	defer unstamped.Free()
	probe.SetLen(copy(probe.Data(), tmpl.stampFlow(1, 0, 0)))
	probe.SetRxTimestamped()
	unstamped.SetLen(copy(unstamped.Data(), tmpl.stampFlow(2, 0, 0)))
	foreign.SetLen(nic.PutPTP(foreign.Data(), DefaultAddrs().DstMAC, net.HardwareAddr{2, 0, 0, 0, 0, 0x77}, nic.PTPSync, 5))
	foreign.SetRxTimestamped()
	if n := testing.AllocsPerRun(100, func() {
		latch.full, latch.st = true, nic.RxStamp{SeqID: 1}
		w.deliver(probe, 0)
		latch.full = true
		w.deliver(foreign, 0)
		w.deliver(unstamped, 0)
	}); n != 0 {
		t.Errorf("%v allocations per round", n)
	}
}
