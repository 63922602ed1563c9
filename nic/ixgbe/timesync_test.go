package ixgbe

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/wire"
)

// TestTimesyncFollowsLinkSpeed: the 82599's SYSTIM counts MAC clock cycles, whose period
// depends on the link speed, so TIMINCA must be chosen again when the link comes up at
// another speed; with the one chosen at EnableTimesync the clock ran ten times slow at
// 1 Gb/s. Both ways in: the link renegotiated at 1 Gb/s after the enable, and the
// enable made while the link was down.
func TestTimesyncFollowsLinkSpeed(t *testing.T) {
	for _, downAtEnable := range []bool{false, true} {
		h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQNone})
		m := h.Intel()
		ts, err := nic.TimesyncOf(nictest.DriverPort(h.Port))
		if err != nil {
			t.Fatal(err)
		}
		if downAtEnable {
			m.SetLink(false)
		}
		if err := ts.EnableTimesync(); err != nil {
			t.Fatal(err)
		}
		m.SetLinkSpeed(1000)
		m.SetLink(true)
		testutil.Eventually(t, 5*time.Second, func() bool { return h.Port.Link().SpeedMbps == 1000 }, "link not up at 1 Gb/s")
		// The driver notices within its speed check; then the clock keeps wire time.
		var got, lo, hi int64
		ok := testutil.WaitFor(5*time.Second, func() bool {
			a0 := wire.Now()
			d0, err0 := ts.DeviceTime()
			a1 := wire.Now()
			time.Sleep(2 * time.Millisecond)
			b0 := wire.Now()
			d1, err1 := ts.DeviceTime()
			b1 := wire.Now()
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			got, lo, hi = d1-d0, b0-a1, b1-a0
			return got >= lo-1000 && got <= hi+1000
		})
		if !ok {
			t.Errorf("down at enable %v: device clock counted %d ns in [%d, %d] ns of wire time at 1 Gb/s", downAtEnable, got, lo, hi)
		}
	}
}
