package idle

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

const (
	us      = int64(time.Microsecond)
	autoCap = int64(DefaultIdleThreshold)
)

// autoSim drives an estimator with a synthetic schedule of gaps, as the Idler would: the
// threshold in force after a frame decides whether the next frame is caught by polling
// (gap ≤ threshold) or arrives while asleep, in which case a sleep cycle is recorded.
type autoSim struct {
	a      autoThreshold
	now    int64
	polled int   // frames caught by polling
	woken  int   // frames that arrived while the thread slept
	pollNs int64 // time spent polling after frames
}

func newAutoSim() *autoSim {
	s := &autoSim{now: int64(time.Second)}
	s.a.init(autoCap)
	s.a.frame(s.now)
	return s
}

// step delivers one frame gap after the previous one and returns the threshold then
// in force.
func (s *autoSim) step(gap int64) int64 {
	t := s.a.threshold()
	if gap <= t {
		s.polled++
		s.pollNs += gap
	} else {
		s.woken++
		s.pollNs += t
		s.a.cycle(5 * us)
	}
	s.now += gap
	s.a.frame(s.now)
	return s.a.threshold()
}

// run delivers n frames at gap(i) and returns after how many frames ok(threshold) first
// held and stayed true to the end (-1 if it did not hold at the end).
func (s *autoSim) run(n int, gap func(i int) int64, ok func(t, gap int64) bool) int {
	settled := -1
	for i := 0; i < n; i++ {
		g := gap(i)
		t := s.step(g)
		if t < 0 || t > autoCap {
			panic("threshold out of [0, cap]")
		}
		switch {
		case !ok(t, g):
			settled = -1
		case settled < 0:
			settled = i + 1
		}
	}
	return settled
}

func constant(g int64) func(int) int64 { return func(int) int64 { return g } }

var (
	sleepsAtOnce = func(t, _ int64) bool { return t == 0 }
	keepsPolling = func(t, gap int64) bool { return t >= gap && t > 0 }
)

func TestAutoThresholdConverges(t *testing.T) {
	tests := []struct {
		name   string
		gap    func(int) int64
		ok     func(t, gap int64) bool
		within int // frames until ok holds for good
	}{
		{"2.5 kpps sleeps at once", constant(400 * us), sleepsAtOnce, 3},
		{"100 ms trickle sleeps at once", constant(100_000 * us), sleepsAtOnce, 3},
		{"50 kpps keeps polling", constant(20 * us), keepsPolling, 1},
		{"100 kpps keeps polling", constant(10 * us), keepsPolling, 1},
		{"50 kpps with hiccups keeps polling", func(i int) int64 {
			if i%20 == 19 {
				return 45 * us // a sender hiccup: 2.25 gaps
			}
			return 20 * us
		}, keepsPolling, 1},
		{"jittered 2.5 kpps sleeps at once", func(i int) int64 {
			return []int64{400 * us, 700 * us, 100 * us, 450 * us, 350 * us}[i%5]
		}, sleepsAtOnce, autoWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAutoSim()
			got := s.run(500, tt.gap, tt.ok)
			if got < 0 || got > tt.within {
				t.Fatalf("settled after %d frames, want within %d (threshold %v, median %v, q90 %v)",
					got, tt.within, time.Duration(s.a.t), time.Duration(s.a.gap), time.Duration(s.a.q90))
			}
		})
	}
}

func TestAutoThresholdSwitches(t *testing.T) {
	type phase struct {
		gap    int64
		ok     func(t, gap int64) bool
		within int
	}
	tests := []struct {
		name   string
		phases []phase
	}{
		{"trickle, burst, trickle", []phase{
			{100_000 * us, sleepsAtOnce, 3},
			{10 * us, keepsPolling, 2},
			{400 * us, sleepsAtOnce, 3},
		}},
		{"dense, sparse, dense", []phase{
			{20 * us, keepsPolling, 1},
			{2000 * us, sleepsAtOnce, 3},
			{20 * us, keepsPolling, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAutoSim()
			for i, ph := range tt.phases {
				got := s.run(200, constant(ph.gap), ph.ok)
				if got < 0 || got > ph.within {
					t.Fatalf("phase %d (gap %v): settled after %d frames, want within %d (threshold %v)",
						i, time.Duration(ph.gap), got, ph.within, time.Duration(s.a.t))
				}
			}
		})
	}
}

// TestAutoThresholdBursts runs an on/off pattern (10 ms at 100 kpps, 90 ms
// silent) with two 150 µs sender hiccups in every burst: only the first frame of a burst
// and the first hiccup may find the thread asleep (the second hiccup is polled for), and
// at the end of a burst the thread sleeps before the fixed threshold.
func TestAutoThresholdBursts(t *testing.T) {
	s := newAutoSim()
	const bursts, perBurst = 20, 1000
	for b := 0; b < bursts; b++ {
		woken := s.woken
		s.step(90_000 * us)
		for i := 1; i < perBurst; i++ {
			g := 10 * us
			if i == 300 || i == 400 {
				g = 150 * us
			}
			if i == 400 && s.a.threshold() < g {
				t.Fatalf("burst %d: threshold %v after a 150 µs hiccup, want polling through the next", b, time.Duration(s.a.threshold()))
			}
			s.step(g)
		}
		if w := s.woken - woken; w > 2 {
			t.Fatalf("burst %d: %d frames arrived while asleep, want at most 2", b, w)
		}
		if th := s.a.threshold(); th >= autoCap || th > autoCap/2+s.a.cost {
			t.Fatalf("burst %d: threshold %v at the end of the burst, want at most half the fixed %v and a wake-up",
				b, time.Duration(th), time.Duration(autoCap))
		}
	}
}

// TestAutoThresholdPoisson: on Poisson traffic at 10 kpps auto polls less than the fixed
// policy after each frame, yet catches most frames by polling.
func TestAutoThresholdPoisson(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newAutoSim()
	var fixedPolled int
	var fixedPollNs int64
	const n = 20000
	for i := 0; i < n; i++ {
		g := int64(rng.ExpFloat64() * float64(100*us))
		if g <= autoCap {
			fixedPolled++
			fixedPollNs += g
		} else {
			fixedPollNs += autoCap
		}
		if th := s.step(g); th <= 0 || th > autoCap {
			t.Fatalf("frame %d: threshold %v, want polling for at most %v", i, time.Duration(th), time.Duration(autoCap))
		}
	}
	t.Logf("polling after frames: auto %v, fixed %v; caught by polling: auto %.3f, fixed %.3f",
		time.Duration(s.pollNs), time.Duration(fixedPollNs), float64(s.polled)/n, float64(fixedPolled)/n)
	if s.pollNs >= fixedPollNs {
		t.Errorf("auto polled %v, the fixed policy %v: want less", time.Duration(s.pollNs), time.Duration(fixedPollNs))
	}
	if f := float64(s.polled) / n; f < 0.85 {
		t.Errorf("auto caught %.3f of the frames by polling (fixed %.3f), want ≥ 0.85", f, float64(fixedPolled)/n)
	}
}

func TestAutoThresholdAllocs(t *testing.T) {
	var a autoThreshold
	a.init(autoCap)
	now := int64(time.Second)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 20 * us
		a.frame(now)
		a.cycle(5 * us)
		_ = a.threshold()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}

// checkSortedWindow fails t unless a's sorted window holds exactly the ring's gaps.
func checkSortedWindow(t *testing.T, a *autoThreshold) {
	t.Helper()
	want := slices.Clone(a.ring[:a.n])
	if a.n == autoWindow {
		want = slices.Clone(a.ring[:])
	}
	slices.Sort(want)
	if got := a.sorted[:a.n]; !slices.Equal(got, want) {
		t.Fatalf("sorted window %v, want %v", got, want)
	}
}

// FuzzAutoThreshold feeds arbitrary gaps, cycle costs and caps: the threshold stays
// within [0, cap], so auto never polls longer than the fixed policy would, and the sorted
// window stays the ring's gaps in order.
func FuzzAutoThreshold(f *testing.F) {
	f.Add([]byte{0, 1, 2, 200, 255, 3}, uint16(300))
	f.Add([]byte{255, 255, 255, 1, 1, 1, 1}, uint16(1))
	f.Fuzz(func(t *testing.T, gaps []byte, capUs uint16) {
		limit := int64(capUs)*us + 1
		var a autoThreshold
		a.init(limit)
		now := int64(time.Second)
		a.frame(now)
		for i, b := range gaps {
			// Gaps from 0 to ~16 ms on a quadratic scale.
			now += int64(b) * int64(b) * 250
			a.frame(now)
			if i%3 == 0 {
				a.cycle(int64(b) * us)
			}
			if th := a.threshold(); th < 0 || th > limit {
				t.Fatalf("threshold %d outside [0, %d]", th, limit)
			}
			checkSortedWindow(t, &a)
		}
	})
}

func TestAutoIdler(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Auto: true, IdleThreshold: DefaultIdleThreshold, WaitTimeout: time.Millisecond})
	if s := d.Stats(); s.Threshold != DefaultIdleThreshold {
		t.Fatalf("initial threshold %v, want the configured %v", s.Threshold, DefaultIdleThreshold)
	}
	now := Now()
	for i := 0; i < 20; i++ {
		now += int64(time.Millisecond)
		d.Traffic(now)
	}
	if s := d.Stats(); s.Threshold != 0 {
		t.Fatalf("threshold %v after sparse traffic, want 0 (sleep at once)", s.Threshold)
	}
	// With threshold 0 the first empty poll sleeps.
	d.Empty(now)
	if s := d.Stats(); s.Sleeps != 1 || s.WakeCost == 0 || s.GapEstimate == 0 {
		t.Fatalf("%+v; want a sleep at the first empty poll and measured gap and wake cost", s)
	}
}

// TestAutoIdlerNoFrameWaitsForTimeout runs a real Idler with Auto on sparse traffic (it
// sleeps at once) and a one-second wait_timeout: every frame, including those that
// arrive between arming and the wait, must wake the thread by its interrupt, never by
// the timeout.
func TestAutoIdlerNoFrameWaitsForTimeout(t *testing.T) {
	for _, delivery := range []Delivery{Inline, Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			d, q := newIdler(t, PolicyConfig{Auto: true, IdleThreshold: DefaultIdleThreshold, WaitTimeout: time.Second, Delivery: delivery})
			var racy int
			q.onSleep = func() { // every 4th sleep: a frame lands between arm and wait
				if racy++; racy%4 == 0 {
					q.inject(1)
				}
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { runLoop(d, q, stop); close(done) }()
			const frames = 60
			for i := 0; i < frames; i++ {
				time.Sleep(time.Duration(400+i%3*300) * time.Microsecond)
				q.inject(1)
			}
			if !testutil.WaitFor(30*time.Second, func() bool { return q.frames() >= frames }) {
				t.Fatalf("got %d of %d frames", q.frames(), frames)
			}
			close(stop)
			d.Stop()
			<-done
			s := d.Stats()
			if s.WakeTimeout != 0 {
				t.Errorf("%+v: a frame waited for the timeout", s)
			}
			if s.Sleeps == 0 {
				t.Errorf("%+v: no sleep on sparse traffic", s)
			}
		})
	}
}

// BenchmarkAutoFrame is the estimator's cost per poll that found frames, window
// updates included (one in autoEvery frames).
func BenchmarkAutoFrame(b *testing.B) {
	var a autoThreshold
	a.init(autoCap)
	rng := rand.New(rand.NewPCG(3, 4))
	gaps := make([]int64, 1024)
	for i := range gaps {
		gaps[i] = int64(rng.ExpFloat64() * float64(100*us))
	}
	now := int64(time.Second)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now += gaps[i%len(gaps)]
		a.frame(now)
	}
}
