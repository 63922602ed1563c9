package igb

import (
	"testing"

	"github.com/uiod/uiod/nic/internal/nictest"
)

// BenchmarkForwardSizes is BenchmarkForward at batch 32 with frames of 64, 1514 and
// 9014 bytes (the last on a port of MTU 9000): bench/callgrind.sh sizes.
func BenchmarkForwardSizes(b *testing.B) { nictest.BenchmarkForwardSizes(b, driver) }

// TestForwardSizes checks that BenchmarkForwardSizes's frames are all received at their
// length and sent.
func TestForwardSizes(t *testing.T) { nictest.ForwardSizesCheck(t, driver) }
