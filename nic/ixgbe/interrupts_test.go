package ixgbe

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic/internal/nictest"
)

func TestITRValue(t *testing.T) {
	nictest.CheckITR(t, layout.ITR.Value, i82599.EitrCntWDis, map[time.Duration]uint32{
		0:                      0,
		time.Nanosecond:        1 << 3,
		2048 * time.Nanosecond: 1 << 3,
		100 * time.Microsecond: 48 << 3,
		time.Second:            0x1ff << 3,
		MaxITR:                 0x1ff << 3, // the exported limit is the field's largest value
		MaxITR - ITRUnit:       0x1fe << 3, // and one unit less is one step less
	})
}
