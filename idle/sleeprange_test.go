package idle

import (
	"testing"
	"time"
)

func TestSleepRange(t *testing.T) {
	min, max := 20*time.Microsecond, 50*time.Microsecond
	d, _ := newIdler(t, PolicyConfig{Mode: SleepRange, SleepMin: min, SleepMax: max})
	var low, high int
	for i := 0; i < 100000; i++ {
		ns := time.Duration(d.randSleep())
		if ns < min || ns > max {
			t.Fatalf("draw %v outside [%v, %v]", ns, min, max)
		}
		if ns < (min+max)/2 {
			low++
		} else {
			high++
		}
	}
	if low < 40000 || high < 40000 {
		t.Fatalf("draws not spread over the range: %d low, %d high", low, high)
	}
	const n = 50
	for i := 0; i < n; i++ {
		d.Empty(Now())
	}
	s := d.Stats()
	if s.Sleeps != n || s.Arms != 0 {
		t.Fatalf("%+v; want %d range sleeps", s, n)
	}
	if s.Asleep < n*min {
		t.Fatalf("slept %v in %d sleeps of at least %v", s.Asleep, n, min)
	}
}
