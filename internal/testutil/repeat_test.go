package testutil

import (
	"testing"
	"time"
)

// TestRepeat: rounds are numbered from 1, the time left shrinks and stays within d, a
// false stops the loop at once, and nothing runs for a zero duration.
func TestRepeat(t *testing.T) {
	tests := []struct {
		name   string
		d      time.Duration
		stopAt int // round that returns false (0: never)
		want   func(n int) bool
	}{
		{"zero duration", 0, 0, func(n int) bool { return n == 0 }},
		{"stop at round 3", time.Hour, 3, func(n int) bool { return n == 3 }},
		{"runs out", 20 * time.Millisecond, 0, func(n int) bool { return n >= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []int
			last := tt.d
			n := Repeat(tt.d, func(n int, left time.Duration) bool {
				seen = append(seen, n)
				if left <= 0 || left > last {
					t.Errorf("round %d: %v left after %v (of %v)", n, left, last, tt.d)
				}
				last = left
				if tt.stopAt == 0 {
					time.Sleep(time.Millisecond)
				}
				return n != tt.stopAt
			})
			if !tt.want(n) {
				t.Errorf("%d rounds", n)
			}
			for i, r := range seen {
				if r != i+1 {
					t.Fatalf("rounds numbered %v", seen)
				}
			}
			if len(seen) != n {
				t.Errorf("%d calls, %d returned", len(seen), n)
			}
		})
	}
}
