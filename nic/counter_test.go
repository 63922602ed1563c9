package nic

import (
	"sync"
	"testing"
)

// TestCounter adds from one writer while readers load: every load is a count the writer
// had reached, never more, and the final count is the sum (run under -race).
func TestCounter(t *testing.T) {
	tests := []struct {
		name        string
		adds, delta uint64
	}{
		{"ones", 10000, 1},
		{"bursts", 1000, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last uint64
				for {
					select {
					case <-done:
						return
					default:
					}
					v := c.Load()
					if v < last || v%tt.delta != 0 || v > tt.adds*tt.delta {
						t.Errorf("load %d after %d", v, last)
						return
					}
					last = v
				}
			}()
			for i := uint64(0); i < tt.adds; i++ {
				c.Add(tt.delta)
			}
			close(done)
			wg.Wait()
			if got := c.Load(); got != tt.adds*tt.delta {
				t.Errorf("count %d, want %d", got, tt.adds*tt.delta)
			}
		})
	}
}
