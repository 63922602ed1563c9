package gate

import (
	"testing"
	"time"
)

// TestCloseAll checks that CloseAll closes every gate whose owner is out, and that a gate
// whose owner stays in a burst past the deadline fails it and leaves every gate open.
func TestCloseAll(t *testing.T) {
	tests := []struct {
		name    string
		inside  int // index of the gate whose owner is inside a burst (-1: none)
		closed  bool
		entered bool // an owner can enter gate 0 afterwards
	}{
		{"owners out", -1, true, false},
		{"an owner inside", 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gs [3]Gate
			if tt.inside >= 0 && !gs[tt.inside].Enter() {
				t.Fatal("enter of an open gate failed")
			}
			if got := CloseAll(time.Now().Add(5*time.Millisecond), &gs[0], &gs[1], &gs[2]); got != tt.closed {
				t.Fatalf("CloseAll %v, want %v", got, tt.closed)
			}
			if got := gs[0].Enter(); got != tt.entered {
				t.Fatalf("enter after CloseAll: %v, want %v", got, tt.entered)
			}
			if tt.closed {
				OpenAll(&gs[0], &gs[1], &gs[2])
				if !gs[2].Enter() {
					t.Fatal("gate closed after OpenAll")
				}
			}
		})
	}
}
