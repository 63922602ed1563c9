package dataplane

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
)

func TestFrameBetweenArmAndSleep(t *testing.T) {
	for _, delivery := range []idle.Delivery{idle.Inline, idle.Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			// wait_timeout 1 s: a frame that waited for it would show as a timeout wake-up.
			p := newPair(t, L2Fwd, idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second, Delivery: delivery}, 1)
			var buf [frameLen]byte
			var once sync.Once
			injected := make(chan struct{})
			p.dp.loops[0].beforeSleep = func() {
				once.Do(func() {
					// The thread has armed and re-polled; the frame arrives now.
					p.a.inject(0, makeFrame(buf[:], p.b.mac, p.a.mac, 0, idle.Now()))
					close(injected)
				})
			}
			if err := p.dp.Start(); err != nil {
				t.Fatal(err)
			}
			<-injected
			waitFor(t, "the frame", func() bool { return p.rec.count.Load() == 1 })
			wokeByInterrupt(t, p.dp.Threads()[0])
			checkLatencies(t, p.rec.lat)
			p.checkClean(t)
		})
	}
}

func TestRandomGapsAroundThreshold(t *testing.T) {
	frames := 100000
	if testing.Short() {
		frames = 5000
	}
	const threshold = 50 * time.Microsecond
	for _, tc := range []struct {
		name   string
		policy idle.PolicyConfig
	}{
		{"adaptive", idle.PolicyConfig{IdleThreshold: threshold, WaitTimeout: time.Second}},
		{"auto", idle.PolicyConfig{IdleThreshold: threshold, Auto: true, WaitTimeout: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := frames
			if tc.name == "auto" {
				n = frames / 5
			}
			p := newPair(t, L2Fwd, tc.policy, n)
			if err := p.dp.Start(); err != nil {
				t.Fatal(err)
			}
			var buf [frameLen]byte
			paceRandomGaps(t, n, threshold, 1, func(i int, rng *rand.Rand) {
				from, to := p.a, p.b
				if rng.IntN(2) == 1 {
					from, to = to, from
				}
				for !from.inject(0, makeFrame(buf[:], to.mac, from.mac, uint64(i), idle.Now())) {
					pause(10 * time.Microsecond) // ring full: the thread is behind
				}
			})
			waitFor(t, "every frame", func() bool { return p.rec.count.Load() == int64(n) })
			p.checkClean(t)
			worst := checkLatencies(t, p.rec.lat)
			if d := p.rec.dups.Load(); d != 0 {
				t.Fatalf("%d frames sent twice", d)
			}
			s := sumStats(p.dp.Stats())
			if s.RxPackets != uint64(n) || s.TxPackets+s.Drops != s.RxPackets || s.Drops != 0 || s.RxBytes != uint64(n*frameLen) {
				t.Fatalf("counters %+v for %d frames", s, n)
			}
			th := p.dp.Threads()[0]
			t.Logf("%s: %d frames, worst latency %v, idle %+v, cpu %v of %v", tc.name, n, worst, th.Idle, th.CPUTime, th.WallTime)
			if th.Idle.Sleeps == 0 || th.Idle.WakeInterrupt == 0 {
				t.Fatalf("the thread never slept or was never woken by an interrupt: %+v", th.Idle)
			}
		})
	}
}

func TestBusyNeverSleeps(t *testing.T) {
	p := newPair(t, L2Fwd, idle.PolicyConfig{Mode: idle.Busy}, 100)
	if err := p.dp.Start(); err != nil {
		t.Fatal(err)
	}
	var buf [frameLen]byte
	for i := 0; i < 100; i++ {
		p.a.inject(0, makeFrame(buf[:], p.b.mac, p.a.mac, uint64(i), idle.Now()))
		pause(200 * time.Microsecond)
	}
	waitFor(t, "the frames", func() bool { return p.rec.count.Load() == 100 })
	p.checkClean(t)
	th := p.dp.Threads()[0]
	if th.Idle.Arms != 0 || th.Idle.Sleeps != 0 || th.Idle.Asleep != 0 || p.a.interrupts.Load() != 0 {
		t.Fatalf("busy thread slept: %+v", th.Idle)
	}
	if s := sumStats(p.dp.Stats()); s.EmptyPolls == 0 || s.Polls < s.EmptyPolls {
		t.Fatalf("polls %+v", s)
	}
}

func TestSleepPolicyStaysInRange(t *testing.T) {
	min, max := 20*time.Microsecond, 50*time.Microsecond
	p := newPair(t, L2Fwd, idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: min, SleepMax: max}, 1)
	if err := p.dp.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "100 sleeps", func() bool { return p.dp.Threads()[0].Idle.Sleeps >= 100 })
	p.checkClean(t)
	th := p.dp.Threads()[0]
	qs := p.dp.Stats()
	// One thread, two queues, no traffic: every loop iteration polls both queues and
	// sleeps once.
	if qs[0].EmptyPolls != th.Idle.Sleeps || qs[1].EmptyPolls != th.Idle.Sleeps {
		t.Fatalf("%d sleeps for %d/%d empty polls", th.Idle.Sleeps, qs[0].EmptyPolls, qs[1].EmptyPolls)
	}
	if th.Idle.Asleep < time.Duration(th.Idle.Sleeps)*min {
		t.Fatalf("slept %v in %d sleeps of at least %v", th.Idle.Asleep, th.Idle.Sleeps, min)
	}
	if th.Idle.Arms != 0 {
		t.Fatalf("sleep policy armed interrupts: %+v", th.Idle)
	}
}

func TestHousekeeping(t *testing.T) {
	for _, policy := range []idle.PolicyConfig{
		{Mode: idle.Busy},
		{Mode: idle.SleepRange, SleepMin: 20 * time.Microsecond, SleepMax: 30 * time.Microsecond},
	} {
		t.Run(policy.Mode.String(), func(t *testing.T) {
			policy.HousekeepingHz = 1000
			policy.HousekeepingLength = 10 * time.Microsecond
			p := newPair(t, L2Fwd, policy, 1)
			if err := p.dp.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "20 ms", func() bool { return p.dp.Threads()[0].WallTime >= 20*time.Millisecond })
			p.checkClean(t)
			th := p.dp.Threads()[0]
			switch policy.Mode {
			case idle.Busy:
				// At most one yield per millisecond (a hard bound of the code), and some:
				// how many depends on how much CPU the loaded machine gave the thread (the
				// schedule itself is idle's TestHousekeeping, on the test's own clock).
				ms := uint64(th.WallTime / time.Millisecond)
				if th.Idle.Yields > ms+1 || th.Idle.Yields == 0 {
					t.Fatalf("%d yields in %v at 1000 Hz", th.Idle.Yields, th.WallTime)
				}
			case idle.SleepRange:
				// Every range sleep is longer than the yield, so it counts as one.
				if th.Idle.Sleeps == 0 || th.Idle.Yields != 0 {
					t.Fatalf("%+v: want range sleeps standing in for every yield", th.Idle)
				}
			}
		})
	}
}
