package dataplane

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"golang.org/x/sys/unix"
)

// recorder collects, on the polling thread, the latency of every frame sent.
type recorder struct {
	lat   []int64 // by sequence number; 0 = not seen
	dups  atomic.Int64
	count atomic.Int64
	port  []int // port index that sent it
}

func newRecorder(n int) *recorder {
	return &recorder{lat: make([]int64, n), port: make([]int, n)}
}

func (r *recorder) hook(port int) func(q int, b *nic.Buf) {
	return func(q int, b *nic.Buf) {
		now := idle.Now()
		seq := frameSeq(b.Bytes())
		if seq >= uint64(len(r.lat)) {
			return
		}
		if r.lat[seq] != 0 {
			r.dups.Add(1)
		}
		r.lat[seq] = max(1, now-frameTime(b.Bytes()))
		r.port[seq] = port
		r.count.Add(1)
	}
}

// waitFor polls cond until it is true or a generous deadline passes (a hang guard, not a
// timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testutil.WaitFor(60*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func sumStats(qs []QueueStats) (s QueueStats) {
	for _, q := range qs {
		s.RxPackets += q.RxPackets
		s.RxBytes += q.RxBytes
		s.TxPackets += q.TxPackets
		s.Drops += q.Drops
		s.Polls += q.Polls
		s.EmptyPolls += q.EmptyPolls
	}
	return s
}

// pacer sleeps between injections on a locked thread with a 1 ns timer slack.
func lockPacer(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

func pause(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}

func TestConfigValidate(t *testing.T) {
	dma := &goDMA{}
	a := newFakePort(t, dma, 2, 2, true)
	b := newFakePort(t, dma, 1, 1, true)
	noirq := newFakePort(t, dma, 1, 1, false)
	intx := newFakePort(t, dma, 2, 2, true)
	intx.rxq[1].vec = intx.rxq[0].vec // one INTx line for both queues
	ok := Queue{RxPort: a, TxPort: b}
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"valid", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, ""},
		{"reflect without tx port", Config{App: Reflect, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a}}}}}, ""},
		{"busy without irq", Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: noirq}}}}}, ""},
		{"no threads", Config{}, "threads"},
		{"no queues", Config{Threads: []Thread{{CPU: -1}}}, "threads[0].queues"},
		{"bad cpu", Config{Threads: []Thread{{CPU: -2, Queues: []Queue{ok}}}}, "threads[0].cpu"},
		{"batch", Config{Batch: MaxBatch + 1, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "batch"},
		{"app", Config{App: 7, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "app"},
		{"policy", Config{Policy: idle.PolicyConfig{Mode: idle.SleepRange}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "policy: sleep_min"},
		{"no rx port", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{TxPort: a}}}}}, "threads[0].queues[0] (t0q0).rx_port"},
		{"no tx port", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a}}}}}, "threads[0].queues[0] (t0q0).tx_port"},
		{"reflect to other port", Config{App: Reflect, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "threads[0].queues[0] (t0q0).tx_port"},
		{"rx queue range", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a, RxQ: 2, TxPort: b}}}}}, "threads[0].queues[0] (t0q0).rx_queue"},
		{"tx queue range", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a, TxPort: b, TxQ: 1}}}}}, "threads[0].queues[0] (t0q0).tx_queue"},
		{"rx queue twice", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}, {CPU: -1, Queues: []Queue{{Name: "x", RxPort: a, TxPort: a}}}}}, "threads[1].queues[0] (x).rx_queue"},
		{"tx queue on two threads", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}, {CPU: -1, Queues: []Queue{{RxPort: a, RxQ: 1, TxPort: b}}}}}, "threads[1].queues[0] (t1q0).tx_queue"},
		{"tx queue shared on one thread", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok, {RxPort: a, RxQ: 1, TxPort: b}}}}}, ""},
		{"shared irq on one thread", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}, {RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, ""},
		{"shared irq on two threads", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}}}, {CPU: -1, Queues: []Queue{{RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, "threads[1].queues[0] (t1q0).rx_queue: its RX interrupt"},
		{"shared irq on two busy threads", Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}}}, {CPU: -1, Queues: []Queue{{RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, ""},
		{"adaptive without irq", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: a}}}}}, "threads[0].queues[0] (t0q0): adaptive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dp, err := New(tt.cfg)
			if dp != nil {
				dp.Stop()
			}
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("New = %v", err)
			case tt.field != "" && err == nil:
				t.Fatal("New accepted the configuration")
			case tt.field != "" && !strings.HasPrefix(err.Error(), tt.field):
				t.Fatalf("New = %q, want an error about %s", err, tt.field)
			}
		})
	}
	// The policy's rules are idle's: New reports them, under "policy" and per queue.
	bad := idle.PolicyConfig{Mode: idle.SleepRange}
	if _, err := New(Config{Policy: bad, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}); err == nil || err.Error() != "policy: "+bad.Validate().Error() {
		t.Errorf("New with %+v = %v, want idle's %v", bad, err, bad.Validate())
	}
	if _, err := New(Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: a}}}}}); !errors.Is(err, idle.ErrNoVector) {
		t.Errorf("adaptive without irq: %v, want idle.ErrNoVector", err)
	}
	for _, s := range []string{"l2fwd", "reflect"} {
		if a, err := ParseApp(s); err != nil || a.String() != s {
			t.Errorf("ParseApp(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseApp("bridge"); err == nil {
		t.Error("ParseApp accepted bridge")
	}
}

func FuzzParseApp(f *testing.F) {
	for _, s := range []string{"l2fwd", "reflect", "", "L2FWD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseApp(s); err == nil && a.String() != s {
			t.Fatalf("ParseApp(%q) = %v", s, a)
		}
	})
}

// pair is two fake ports forwarded into each other by one thread (l2fwd) or each
// reflected by it.
type pair struct {
	dma  *goDMA
	a, b *fakePort
	rec  *recorder
	dp   *Dataplane
}

func newPair(t *testing.T, app App, policy idle.PolicyConfig, frames int) *pair {
	t.Helper()
	p := &pair{dma: &goDMA{}, rec: newRecorder(frames)}
	p.a = newFakePort(t, p.dma, 1, 1, true)
	p.b = newFakePort(t, p.dma, 1, 1, true)
	p.a.onTx, p.b.onTx = p.rec.hook(0), p.rec.hook(1)
	qs := []Queue{{Name: "a", RxPort: p.a, TxPort: p.b}, {Name: "b", RxPort: p.b, TxPort: p.a}}
	if app == Reflect {
		qs = []Queue{{Name: "a", RxPort: p.a}, {Name: "b", RxPort: p.b}}
	}
	dp, err := New(Config{App: app, Policy: policy, Threads: []Thread{{CPU: -1, Queues: qs}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Stop)
	p.dp = dp
	return p
}

// checkClean stops the dataplane and checks that no buffer leaked.
func (p *pair) checkClean(t *testing.T) {
	t.Helper()
	p.dp.Stop()
	for i, port := range []*fakePort{p.a, p.b} {
		if n := port.leaked(); n != 0 {
			t.Errorf("port %d: %d buffers leaked", i, n)
		}
		if err := port.Close(); err != nil {
			t.Errorf("port %d: %v", i, err)
		}
	}
}

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
			th := p.dp.Threads()[0]
			if th.Idle.WakeTimeout != 0 || th.Idle.WakeInterrupt == 0 {
				t.Fatalf("idle stats %+v: the frame was not woken up by its interrupt", th.Idle)
			}
			if lat := time.Duration(p.rec.lat[0]); lat >= time.Second {
				t.Fatalf("frame took %v, a full wait_timeout", lat)
			}
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
			lockPacer(t)
			rng := rand.New(rand.NewPCG(1, 2))
			var buf [frameLen]byte
			for i := 0; i < n; i++ {
				from, to := p.a, p.b
				if rng.IntN(2) == 1 {
					from, to = to, from
				}
				for !from.inject(0, makeFrame(buf[:], to.mac, from.mac, uint64(i), idle.Now())) {
					pause(10 * time.Microsecond) // ring full: the thread is behind
				}
				// Gaps uniform in [0, 2×threshold]: about half the frames find the thread
				// polling, half find it asleep or on its way there.
				pause(time.Duration(rng.Int64N(int64(2 * threshold))))
			}
			waitFor(t, "every frame", func() bool { return p.rec.count.Load() == int64(n) })
			p.checkClean(t)
			var worst int64
			for seq, lat := range p.rec.lat {
				if lat == 0 {
					t.Fatalf("frame %d lost", seq)
				}
				worst = max(worst, lat)
			}
			if d := p.rec.dups.Load(); d != 0 {
				t.Fatalf("%d frames sent twice", d)
			}
			if time.Duration(worst) >= time.Second {
				t.Fatalf("a frame waited %v, a full wait_timeout", time.Duration(worst))
			}
			s := sumStats(p.dp.Stats())
			if s.RxPackets != uint64(n) || s.TxPackets+s.Drops != s.RxPackets || s.Drops != 0 || s.RxBytes != uint64(n*frameLen) {
				t.Fatalf("counters %+v for %d frames", s, n)
			}
			th := p.dp.Threads()[0]
			t.Logf("%s: %d frames, worst latency %v, idle %+v, cpu %v of %v", tc.name, n, time.Duration(worst), th.Idle, th.CPUTime, th.WallTime)
			if th.Idle.Sleeps == 0 || th.Idle.WakeInterrupt == 0 {
				t.Fatalf("the thread never slept or was never woken by an interrupt: %+v", th.Idle)
			}
		})
	}
}

func TestCountersAndApps(t *testing.T) {
	for _, app := range []App{L2Fwd, Reflect} {
		t.Run(app.String(), func(t *testing.T) {
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
				// At most one yield per millisecond, and (deadline 1.25 ms) a good part of
				// the expected number even on a loaded machine.
				ms := uint64(th.WallTime / time.Millisecond)
				if th.Idle.Yields > ms+1 || th.Idle.Yields < ms/4 {
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
