package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/nic/internal/nictest"
)

// BenchmarkForward is the driver-only cost of forwarding a frame (receive, send back,
// reclaim) with the rings' write-backs written by the benchmark: one op is one packet.
//
//	go test -run '^$' -bench Forward -benchtime 3000000x ./nic/ixgbe/
func BenchmarkForward(b *testing.B) { nictest.BenchmarkForwardBatches(b, driver) }
