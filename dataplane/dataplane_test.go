package dataplane

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"golang.org/x/sys/unix"
)

func TestCountersAndApps(t *testing.T) {
	for _, app := range []App{L2Fwd, Reflect} {
		t.Run(appName(app), func(t *testing.T) {
			const bursts, per = 200, 8
			p := newPair(t, app, idle.PolicyConfig{Mode: idle.Busy}, bursts*per)
			p.b.txLimit = 1 // TX queue of b takes one frame per burst: the rest are drops
			var swapped atomic.Int64
			aTx := p.a.onTx
			p.a.onTx = func(q int, b *nic.Buf) {
				f := b.Bytes()
				if app == Reflect && string(f[0:6]) == string(p.a.mac) {
					t.Error("reflected frame still addressed to the port")
				}
				if app == Reflect && string(f[6:12]) == string(p.a.mac) {
					swapped.Add(1)
				}
				aTx(q, b)
			}
			if err := p.dp.Start(); err != nil {
				t.Fatal(err)
			}
			var buf [frameLen]byte
			seq := uint64(0)
			for i := 0; i < bursts; i++ {
				// A burst lands on a's RX ring at once (under its lock), so one RX burst
				// sees all of it.
				r := p.a.rxq[0]
				r.mu.Lock()
				for j := 0; j < per; j++ {
					b := r.posted[len(r.posted)-1]
					r.posted = r.posted[:len(r.posted)-1]
					b.SetLen(copy(b.Data(), makeFrame(buf[:], p.a.mac, p.b.mac, seq, idle.Now())))
					r.filled = append(r.filled, b)
					seq++
				}
				r.mu.Unlock()
				waitFor(t, "the burst", func() bool { return sumStats(p.dp.Stats()).RxPackets == seq })
			}
			p.checkClean(t)
			s := sumStats(p.dp.Stats())
			if s.RxPackets != bursts*per || s.TxPackets+s.Drops != s.RxPackets {
				t.Fatalf("counters %+v: rx ≠ tx + drops", s)
			}
			sent := p.a.txPackets.Load() + p.b.txPackets.Load()
			if s.TxPackets != sent || uint64(p.rec.count.Load()) != sent {
				t.Fatalf("counted %d sent, ports sent %d, recorded %d", s.TxPackets, sent, p.rec.count.Load())
			}
			switch app {
			case L2Fwd: // a → b, b limited to one per burst
				if p.a.txPackets.Load() != 0 || s.Drops == 0 {
					t.Fatalf("l2fwd: a sent %d, drops %d; want everything out of b and drops", p.a.txPackets.Load(), s.Drops)
				}
			case Reflect: // a → a, unlimited
				if s.Drops != 0 || swapped.Load() != bursts*per {
					t.Fatalf("reflect: drops %d, swapped %d of %d", s.Drops, swapped.Load(), bursts*per)
				}
			}
		})
	}
}

func TestStopFromEveryState(t *testing.T) {
	long := idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}
	threaded := long
	threaded.Delivery = idle.Threaded
	for _, tc := range []struct {
		name   string
		policy idle.PolicyConfig
		state  idle.State // wait for it, then Stop; Armed uses the hook
	}{
		{"polling", idle.PolicyConfig{Mode: idle.Busy}, idle.Polling},
		{"armed", long, idle.Armed},
		{"asleep", long, idle.Asleep},
		{"asleep threaded", threaded, idle.Asleep},
		{"range sleep", idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: time.Millisecond, SleepMax: 2 * time.Millisecond}, idle.Yielding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, L2Fwd, tc.policy, 10)
			armed, release := make(chan struct{}), make(chan struct{})
			if tc.state == idle.Armed {
				var once sync.Once
				p.dp.loops[0].beforeSleep = func() {
					if p.rec.count.Load() == 10 { // after the traffic below
						once.Do(func() { close(armed); <-release })
					}
				}
			}
			if err := p.dp.Start(); err != nil {
				t.Fatal(err)
			}
			// Some traffic first, so that buffers are in flight.
			var buf [frameLen]byte
			for i := 0; i < 10; i++ {
				p.a.inject(0, makeFrame(buf[:], p.b.mac, p.a.mac, uint64(i), idle.Now()))
			}
			waitFor(t, "the frames", func() bool { return p.rec.count.Load() == 10 })
			stopped := make(chan struct{})
			if tc.state == idle.Armed {
				<-armed
				go func() { p.dp.Stop(); close(stopped) }()
				for !p.dp.stop.Load() {
					runtime.Gosched()
				}
				close(release)
			} else {
				waitFor(t, tc.state.String(), func() bool { return p.dp.Threads()[0].State == tc.state })
				go func() { p.dp.Stop(); close(stopped) }()
			}
			select {
			case <-stopped:
			case <-time.After(60 * time.Second):
				t.Fatal("Stop hangs")
			}
			th := p.dp.Threads()[0]
			if th.Idle.WakeTimeout != 0 {
				t.Fatalf("%+v: Stop waited for a timeout", th.Idle)
			}
			if tc.state == idle.Armed || tc.state == idle.Asleep {
				if th.Idle.WakeStop != 1 {
					t.Fatalf("%+v: want the sleep ended by Stop", th.Idle)
				}
			}
			p.checkClean(t)
			if s := sumStats(p.dp.Stats()); s.RxPackets != 10 || s.TxPackets != 10 {
				t.Fatalf("counters after Stop: %+v", s)
			}
			p.dp.Stop() // idempotent
		})
	}
}

func TestStartFailsCleanly(t *testing.T) {
	dma := &goDMA{}
	a, b := newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true)
	dp, err := New(Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{
		{CPU: -1, Queues: []Queue{{RxPort: a, TxPort: a}}},
		{CPU: maxCPU - 1, Queues: []Queue{{RxPort: b, TxPort: b}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err == nil || !strings.Contains(err.Error(), "CPU 1023") {
		t.Fatalf("Start with an absent CPU = %v", err)
	}
	dp.Stop()
	if err := dp.Start(); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

func TestPinnedThreads(t *testing.T) {
	dma := &goDMA{}
	a, b := newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true)
	rec := newRecorder(2)
	a.onTx, b.onTx = rec.hook(0), rec.hook(1)
	dp, err := New(Config{App: Reflect, Threads: []Thread{
		{CPU: 0, Queues: []Queue{{RxPort: a}}},
		{CPU: runtime.NumCPU() - 1, Queues: []Queue{{RxPort: b}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Each thread reports its real affinity from the poll thread itself, before it sleeps.
	var affinity [2]atomic.Value
	for i, l := range dp.loops {
		l.beforeSleep = func() {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(0, &set); err == nil && affinity[i].Load() == nil {
				affinity[i].Store(set)
			}
		}
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	defer dp.Stop()
	var buf [frameLen]byte
	a.inject(0, makeFrame(buf[:], a.mac, b.mac, 0, idle.Now()))
	b.inject(0, makeFrame(buf[:], b.mac, a.mac, 1, idle.Now()))
	waitFor(t, "both frames", func() bool { return rec.count.Load() == 2 })
	waitFor(t, "both threads asleep", func() bool { return affinity[0].Load() != nil && affinity[1].Load() != nil })
	dp.Stop()
	ths := dp.Threads()
	if len(ths) != 2 || ths[1].CPU != runtime.NumCPU()-1 || ths[0].WallTime == 0 {
		t.Fatalf("threads %+v", ths)
	}
	for i, cpu := range []int{0, runtime.NumCPU() - 1} {
		set := affinity[i].Load().(unix.CPUSet)
		if set.Count() != 1 || !set.IsSet(cpu) {
			t.Errorf("thread %d runs with affinity %v, want only CPU %d", i, set, cpu)
		}
	}
}

func TestHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	p := newPair(t, Reflect, idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, 1)
	l := p.dp.loops[0]
	var buf [frameLen]byte
	frame := makeFrame(buf[:], p.b.mac, p.a.mac, 0, idle.Now())
	// Poll with traffic, the app and the counters.
	if n := testing.AllocsPerRun(1000, func() {
		p.a.inject(0, frame)
		l.Poll()
		l.idler.Traffic(idle.Now())
		l.publish(idle.Now())
	}); n != 0 {
		t.Fatalf("poll with traffic: %v allocations", n)
	}
	// A whole arm / sleep / interrupt / disarm cycle.
	l.beforeSleep = func() { p.a.inject(0, frame) }
	if n := testing.AllocsPerRun(200, func() {
		l.idler.Empty(idle.Now())
		l.Poll()
		l.idler.Traffic(idle.Now())
	}); n != 0 {
		t.Fatalf("sleep cycle: %v allocations", n)
	}
	if s := l.idler.Stats(); s.WakeInterrupt < 200 {
		t.Fatalf("idle stats %+v: the cycles did not sleep", s)
	}
}
