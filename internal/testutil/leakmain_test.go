package testutil

import (
	"sync"
	"testing"
	"time"
)

type runFunc func() int

func (f runFunc) Run() int { return f() }

func TestRunCheckingLeaks(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	// A case's goroutine that exits in time must be gone before the next case counts.
	var sleepers sync.WaitGroup
	tests := []struct {
		name string
		run  func() int
		want int
	}{
		{"clean", func() int { return 0 }, 0},
		{"failed", func() int { return 3 }, 3},
		{"exits in time", func() int {
			sleepers.Go(func() { time.Sleep(20 * time.Millisecond) })
			return 0
		}, 0},
		{"leaks", func() int {
			go func() { <-stop }()
			return 0
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runCheckingLeaks(runFunc(tt.run), time.Second); got != tt.want {
				t.Errorf("exit code %d, want %d", got, tt.want)
			}
		})
		sleepers.Wait()
	}
}
