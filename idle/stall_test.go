package idle

import (
	"testing"
	"time"
)

func TestStalls(t *testing.T) {
	us := int64(time.Microsecond)
	for _, tc := range []struct {
		name    string
		polls   []int64 // gaps before each poll, µs; negative: the poll found frames
		stalls  uint64
		total   time.Duration
		longest time.Duration
	}{
		{"steady polls", []int64{1, 1, 1, 1}, 0, 0, 0},
		{"at the threshold", []int64{1, 20, 1}, 0, 0, 0},
		{"one empty poll late", []int64{1, 21, 1}, 1, 21 * time.Microsecond, 21 * time.Microsecond},
		{"two, the longest kept", []int64{300, 1, 25, 1}, 2, 325 * time.Microsecond, 300 * time.Microsecond},
		{"a poll with frames is not counted", []int64{1, -500, 1}, 0, 0, 0},
		{"the first turn has nothing to compare with", []int64{}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newIdler(t, PolicyConfig{Mode: Busy})
			now := Now()
			d.Empty(now)
			for _, g := range tc.polls {
				if g < 0 {
					now += -g * us
					d.Traffic(now)
					continue
				}
				now += g * us
				d.Empty(now)
			}
			s := d.Stats()
			if s.Stalls != tc.stalls || s.StallTime != tc.total || s.MaxStall != tc.longest {
				t.Fatalf("stalls %d, %v, longest %v; want %d, %v, %v", s.Stalls, s.StallTime, s.MaxStall,
					tc.stalls, tc.total, tc.longest)
			}
		})
	}
}

// A turn that slept is no stall: the poll after an adaptive sleep comes late by design.
// The turn ends when the wait does, so the next poll is measured from there (the test
// passes its own times, so the machine's load cannot make a stall of its own).
func TestStallsLeaveSleepsOut(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{Mode: Adaptive, IdleThreshold: time.Microsecond, WaitTimeout: time.Millisecond})
	now := Now()
	d.Traffic(now)
	pre := now + int64(2*time.Microsecond)
	d.Empty(pre) // over the threshold: sleeps until the timeout
	s := d.Stats()
	if s.Sleeps != 1 {
		t.Fatalf("%d sleeps, want 1 (queues %+v)", s.Sleeps, q)
	}
	// The wait began at or after pre-2µs (real time had reached now) and lasted Asleep.
	if got := time.Duration(d.turnEnd - pre); got < s.Asleep-2*time.Microsecond {
		t.Fatalf("the turn that slept %v ended %v after it began", s.Asleep, got)
	}
	d.Empty(d.turnEnd + int64(time.Microsecond))
	if s := d.Stats(); s.Stalls != 0 {
		t.Fatalf("the poll after a sleep counted as %d stall(s) of %v", s.Stalls, s.StallTime)
	}
}
