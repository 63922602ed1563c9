package ixgbe

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
)

func TestITRValue(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want uint32
	}{
		{0, 0},
		{time.Nanosecond, 1 << 3},
		{2048 * time.Nanosecond, 1 << 3},
		{100 * time.Microsecond, 48 << 3},
		{time.Second, 0x1ff << 3},
		{MaxITR, 0x1ff << 3},           // the exported limit is the field's largest value
		{MaxITR - ITRUnit, 0x1fe << 3}, // and one unit less is one step less
	}
	for _, tt := range tests {
		if got := itrValue(tt.d) &^ i82599.EitrCntWDis; got != tt.want {
			t.Errorf("itrValue(%v) = %#x, want %#x", tt.d, got, tt.want)
		}
	}
}
