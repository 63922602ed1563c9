package irq

import (
	"testing"
	"time"
)

// autoPhase is a stretch of frames at one gap, after which the threshold must have become
// want within the given number of frames.
type autoPhase struct {
	gap    int64
	want   int64
	within int
}

func TestAutoThreshold(t *testing.T) {
	const max = int64(300 * time.Microsecond)
	us := int64(time.Microsecond)
	// feed gives the estimator n frames at the given gap and one sleep cycle of 5 µs
	// overhead per frame when sparse, and returns after how many frames the threshold
	// first became want (-1 if never).
	feed := func(a *autoThreshold, now *int64, gap int64, n int, want int64) int {
		first := -1
		for i := 0; i < n; i++ {
			*now += gap
			a.frame(*now)
			if gap > max {
				a.cycle(5 * us)
			}
			if first < 0 && a.threshold() == want {
				first = i + 1
			}
		}
		return first
	}
	tests := []struct {
		name   string
		phases []autoPhase
	}{
		{"sparse converges to sleep at once", []autoPhase{{400 * us, 0, 8}}},
		{"dense keeps polling", []autoPhase{{20 * us, max, 1}}},
		{"trickle then burst then trickle", []autoPhase{{int64(100 * time.Millisecond), 0, 3}, {10 * us, max, 1}, {400 * us, 0, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a autoThreshold
			a.init(max)
			now := int64(time.Second)
			a.frame(now)
			for i, ph := range tt.phases {
				got := feed(&a, &now, ph.gap, 50, ph.want)
				if got < 0 || got > ph.within {
					t.Fatalf("phase %d (gap %v): threshold %v reached after %d frames, want within %d (gap estimate %v, cost %v)",
						i, time.Duration(ph.gap), time.Duration(ph.want), got, ph.within, time.Duration(a.gap), time.Duration(a.cost))
				}
				if a.threshold() != ph.want {
					t.Fatalf("phase %d: threshold %v at the end, want %v", i, time.Duration(a.threshold()), time.Duration(ph.want))
				}
			}
		})
	}
}

func TestAutoIdler(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Auto: true, WaitTimeout: time.Millisecond})
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
	if s := d.Stats(); s.Sleeps != 1 || s.WakeCost == 0 {
		t.Fatalf("%+v; want a sleep at the first empty poll and a measured wake cost", s)
	}
}
