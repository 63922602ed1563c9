package ixgbe

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/nic/internal/nictest"
)

func TestBurstAllocs(t *testing.T) { nictest.BurstAllocs(t, driver) }

// BenchmarkForward is the driver-only cost of forwarding a frame (receive, send back,
// reclaim) with the rings' write-backs written by the benchmark: one op is one packet.
//
//	go test -run '^$' -bench Forward -benchtime 3000000x ./nic/ixgbe/
func BenchmarkForward(b *testing.B) {
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			nictest.BenchmarkForward(b, driver, batch)
		})
	}
}
