package nictest

import (
	"testing"
	"time"
)

// CheckITR checks itr, a driver's conversion of an interrupt interval to an EITR value,
// against want (the EITR interval field for each interval), with the bits keep (the
// driver's keep-the-counter flag) masked off.
func CheckITR(t *testing.T, itr func(time.Duration) uint32, keep uint32, want map[time.Duration]uint32) {
	t.Helper()
	for d, w := range want {
		if got := itr(d) &^ keep; got != w {
			t.Errorf("EITR value of %v = %#x, want %#x", d, got, w)
		}
	}
}
