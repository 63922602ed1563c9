package idle

import (
	"math/rand/v2"
	"testing"
	"time"
)

// predictSim drives the estimator's periodic prediction with a synthetic schedule: frame
// k arrives at k·period + jitter(k); a timer set for wakeAt wakes the thread late by
// late(k). A frame that arrives after the thread woke is caught by polling; one that
// arrives before is caught by interrupt, wake ns after it arrived.
type predictSim struct {
	a                   autoThreshold
	hits, early, unpred int
	spin                int64 // total polling between timer wake-ups and frames
}

func (p *predictSim) run(n int, period int64, jitter, late func(k int) int64) {
	const wake = 15 * us
	start := int64(time.Second)
	p.a.init(autoCap)
	p.a.frame(start)
	for k := 1; k <= n; k++ {
		arrive := start + int64(k)*period + jitter(k)
		at := p.a.wakeAt()
		// As the Idler does: a frame caught by interrupt is recorded one estimated
		// wake-up before the thread saw it.
		switch {
		case at == 0:
			p.unpred++
			p.a.frame(arrive + wake - p.a.late)
		case at+late(k) <= arrive:
			p.hits++
			p.spin += arrive - (at + late(k))
			p.a.woke(late(k))
			p.a.caught()
			p.a.frame(arrive)
		default:
			p.early++
			p.a.early(min(arrive+wake, at+late(k)))
			p.a.frame(arrive + wake - p.a.late)
		}
	}
}

func zero(int) int64 { return 0 }

func TestAutoPredictsPeriodicTraffic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lateNoise := func(int) int64 { return 5*us + int64(rng.IntN(10))*us } // 5–14 µs
	tests := []struct {
		name     string
		period   int64
		jitter   func(int) int64
		late     func(int) int64
		minHits  float64 // share of the frames caught by polling after a timer wake-up
		maxSpin  int64   // mean polling per caught frame
		predicts bool
	}{
		{"2.5 kpps, exact timer", 400 * us, zero, zero, 0.95, 3 * us, true},
		{"2.5 kpps, timer 5–14 µs late", 400 * us, zero, lateNoise, 0.6, 12 * us, true},
		{"2.5 kpps, sender jitter ±3 µs", 400 * us, func(k int) int64 { return int64(k%7-3) * us }, lateNoise, 0.6, 15 * us, true},
		{"100 Hz", 10_000 * us, zero, lateNoise, 0.6, 12 * us, true},
		{"10 kpps", 100 * us, zero, lateNoise, 0.6, 12 * us, true},
		{"50 kpps is polled, not predicted", 20 * us, zero, zero, 0, 0, false},
		{"Poisson is not predicted", 400 * us, func(k int) int64 { return int64(rng.ExpFloat64()*float64(400*us)) - 400*us }, zero, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p predictSim
			const n = 2000
			p.run(n, tt.period, tt.jitter, tt.late)
			hits := float64(p.hits) / n
			t.Logf("hits %.3f, early %d, unpredicted %d, lead %v, period %v", hits, p.early, p.unpred,
				time.Duration(p.a.lead), time.Duration(p.a.period))
			if !tt.predicts {
				if p.hits+p.early > 0 {
					t.Fatalf("%d frames predicted, want none", p.hits+p.early)
				}
				return
			}
			if hits < tt.minHits {
				t.Errorf("%.3f of the frames caught after a timer wake-up, want ≥ %.2f", hits, tt.minHits)
			}
			if p.hits > 0 {
				if spin := p.spin / int64(p.hits); spin > tt.maxSpin {
					t.Errorf("polled %v per caught frame, want ≤ %v", time.Duration(spin), time.Duration(tt.maxSpin))
				}
			}
			if p.unpred > 2*autoWindow {
				t.Errorf("%d frames before the prediction started, want ≤ %d", p.unpred, 2*autoWindow)
			}
		})
	}
}

// TestAutoLeadTracksLateness: with the timer late by a uniform 0–20 µs, the lead settles
// where about autoLeadHit % of the frames are caught after the timer.
func TestAutoLeadTracksLateness(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var p predictSim
	const n = 5000
	p.run(n, 400*us, zero, func(int) int64 { return int64(rng.IntN(21)) * us })
	got := 100 * float64(p.hits) / float64(p.hits+p.early)
	t.Logf("caught %.1f %%, lead %v", got, time.Duration(p.a.lead))
	if got < autoLeadHit-8 || got > autoLeadHit+8 {
		t.Fatalf("caught %.1f %% of the predicted frames, want about %d %%", got, autoLeadHit)
	}
}

// TestAutoScheduleKeepsPhase: frames caught by interrupt are recorded late by the
// wake-up, but the schedule stays on the sender's, so the next prediction is not late;
// frames that beat the timer pull it earlier.
func TestAutoScheduleKeepsPhase(t *testing.T) {
	var a autoThreshold
	a.init(autoCap)
	now := int64(time.Second)
	a.frame(now)
	for range 4 * autoWindow {
		now += 400 * us
		a.caught()
		a.frame(now)
	}
	if a.period != 400*us {
		t.Fatalf("period %v, want 400µs", time.Duration(a.period))
	}
	due := a.due
	// The next frame comes on time but is caught by interrupt 30 µs later.
	a.frame(due + 30*us)
	if want := due + 400*us; a.due != want {
		t.Fatalf("due %v after the schedule, want %v (a frame caught late must not shift it)",
			time.Duration(a.due-due), time.Duration(want-due))
	}
	// A frame far off the schedule (traffic resumed after a pause) re-anchors it.
	a.frame(due + 2500*us)
	if want := due + 2900*us; a.due != want {
		t.Fatalf("due %v after a pause, want %v", time.Duration(a.due-due), time.Duration(want-due))
	}
	// A frame that woke the thread by interrupt 40 µs before the schedule said it would
	// come shows the schedule late: it moves half way towards the wake-up.
	due = a.due
	a.early(due - 40*us)
	a.frame(due - 40*us)
	if want := due + 400*us - 20*us; a.due != want {
		t.Fatalf("due %v after an early frame, want %v", time.Duration(a.due-due), time.Duration(want-due))
	}
}

// TestAutoIdlerPredicts drives a real Idler with Auto through one prediction: after
// periodic traffic (a frame every 400 µs, the last one now), its next sleep ends by its
// timer ahead of the next frame, and a frame that then arrives is caught by polling.
func TestAutoIdlerPredicts(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{Auto: true, IdleThreshold: DefaultIdleThreshold, WaitTimeout: time.Second})
	const gap = 400 * us
	now := Now()
	for i := 4 * autoWindow; i >= 0; i-- {
		d.Traffic(now - int64(i)*gap)
	}
	if s := d.Stats(); s.Threshold != 0 {
		t.Fatalf("threshold %v on 2.5 kpps, want 0 (sleep at once)", s.Threshold)
	}
	start := Now()
	d.Empty(start) // sleeps until the timer, ahead of the frame due at now+gap
	woke := Now()
	if woke-now > gap+int64(100*time.Millisecond) {
		t.Fatalf("slept %v: the timer did not end the sleep", time.Duration(woke-start))
	}
	q.inject(1) // the frame, while the thread polls for it
	if n := q.Poll(); n != 1 {
		t.Fatalf("poll found %d frames, want 1", n)
	}
	d.Traffic(Now())
	s := d.Stats()
	t.Logf("slept %v; %+v", time.Duration(woke-start), s)
	if s.PredictHits != 1 || s.Period == 0 || s.Lead == 0 {
		t.Fatalf("%+v: want the frame caught after a predicted wake-up, and period and lead reported", s)
	}
	if s.WakeTimeout != 0 || s.WakeInterrupt != 0 {
		t.Fatalf("%+v: want no timeout or interrupt wake-up", s)
	}
}
