package idle

import (
	"testing"
	"time"
)

// skips counts the Skips that return true in a row (at most limit).
func skips(d *Idler, limit int) int {
	n := 0
	for n < limit && d.Skip() {
		n++
	}
	return n
}

// Busy polls that come quickly are left untold in runs that double up to MaxSkip; a slow
// gap halves the run; Traffic ends it.
func TestSkipRunsGrowAndShrink(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Mode: Busy})
	now := Now()
	d.Empty(now)
	if n := skips(d, 1000); n != 0 {
		t.Fatalf("the first Empty allowed %d untold polls, want 0 (no gap measured yet)", n)
	}
	want := 1
	for range 10 {
		now += 100 // ns: far under SkipTarget/2 for the whole run
		d.Empty(now)
		if n := skips(d, 1000); n != want {
			t.Fatalf("run %d, want %d", n, want)
		}
		want = min(2*want, MaxSkip)
	}
	now += int64(SkipTarget) + 1
	d.Empty(now)
	if n := skips(d, 1000); n != MaxSkip/2 {
		t.Fatalf("after a gap over SkipTarget the run is %d, want %d", n, MaxSkip/2)
	}
	now += int64(SkipTarget) * 3 / 4 // between half the target and the target: kept
	d.Empty(now)
	if n := skips(d, 1000); n != MaxSkip/2 {
		t.Fatalf("a gap of 3/4 of SkipTarget changed the run to %d, want %d", n, MaxSkip/2)
	}
	d.Empty(now + 100)
	d.Traffic(now + 200)
	if n := skips(d, 1000); n != 0 {
		t.Fatalf("after Traffic %d polls went untold, want 0", n)
	}
	if d.SkipRun() != 0 {
		t.Fatalf("SkipRun %d after Traffic, want 0", d.SkipRun())
	}
}

// SleepRange sleeps at every empty poll, so none goes untold.
func TestSkipNeverUnderSleepRange(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Mode: SleepRange, SleepMin: time.Microsecond, SleepMax: 2 * time.Microsecond})
	for range 5 {
		d.Empty(Now())
		if n := skips(d, 1000); n != 0 {
			t.Fatalf("SleepRange left %d polls untold", n)
		}
	}
}

// The poll after an adaptive sleep is told (it sleeps again, or counts a spurious
// wake-up), and so is the first empty poll after traffic, where a zero threshold sleeps.
func TestSkipNotAfterRest(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Mode: Adaptive, IdleThreshold: 50 * time.Microsecond, WaitTimeout: time.Millisecond})
	now := Now()
	d.Traffic(now)
	for range 8 {
		now += 100
		d.Empty(now) // short of the threshold: polls on
	}
	if n := skips(d, 1000); n == 0 {
		t.Fatal("no untold polls short of the threshold")
	}
	d.Empty(now + int64(100*time.Microsecond)) // past it: sleeps until the timeout
	if s := d.Stats(); s.Sleeps != 1 {
		t.Fatalf("%d sleeps, want 1", s.Sleeps)
	}
	if n := skips(d, 1000); n != 0 {
		t.Fatalf("%d polls untold after a sleep, want 0", n)
	}
}

// A pinned run replaces the sizing, except after a rest.
func TestPinSkipRun(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Mode: Busy})
	d.PinSkipRun(10)
	now := Now()
	for range 3 {
		now += int64(time.Millisecond) // a gap that would shrink a sized run
		d.Empty(now)
		if n := skips(d, 1000); n != 10 {
			t.Fatalf("pinned run %d, want 10", n)
		}
	}
	d.PinSkipRun(1000)
	d.Empty(now + 1)
	if n := skips(d, 1000); n != MaxSkip {
		t.Fatalf("a pin over MaxSkip gave %d, want %d", n, MaxSkip)
	}
	d.PinSkipRun(0)
	d.Empty(now + int64(time.Second))
	if n := skips(d, 1000); n != MaxSkip/2 {
		t.Fatalf("unpinned after a slow gap: run %d, want %d", n, MaxSkip/2)
	}
}
