package idle

import (
	"testing"
	"time"
)

func TestHousekeepingRate(t *testing.T) {
	const hz = 500
	period := time.Second / hz
	for _, tc := range []struct {
		name    string
		traffic bool // only polls that find frames: yields happen at the deadline
	}{{"empty polls", false}, {"unbroken traffic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newIdler(t, PolicyConfig{Mode: Busy, HousekeepingHz: hz, HousekeepingLength: 20 * time.Microsecond})
			// The loop's clock is the test's: a poll every 10 µs for 100 ms, however long
			// the machine takes, so the counts below do not depend on its load.
			start := Now()
			end := start + int64(100*time.Millisecond)
			for now := start; now < end; now += int64(10 * time.Microsecond) {
				if tc.traffic {
					d.Traffic(now)
				} else {
					d.Empty(now)
				}
			}
			elapsed := time.Duration(end - start)
			s := d.Stats()
			// At most one yield per period (a hard bound of the code) ...
			if max := uint64(elapsed/period) + 1; s.Yields > max {
				t.Fatalf("%d yields in %v, more than one per %v", s.Yields, elapsed, period)
			}
			// ... and at least one per deadline (1.25 periods after the previous yield).
			if want := uint64(elapsed/(period*5/4)) - 1; s.Yields < want {
				t.Fatalf("%d yields in %v, want at least %d", s.Yields, elapsed, want)
			}
			if s.YieldTime < time.Duration(s.Yields)*20*time.Microsecond {
				t.Fatalf("yielded %v in %d yields of 20µs", s.YieldTime, s.Yields)
			}
		})
	}
}
