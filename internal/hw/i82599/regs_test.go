package i82599

import "testing"

func TestIVAREntry(t *testing.T) {
	// 82599 datasheet 8.2.3.10.13 / Linux ixgbe_set_ivar: queue q's RX entry is byte
	// 2·(q&1) of IVAR(q>>1), its TX entry the byte above.
	for _, tt := range []struct {
		q     int
		tx    bool
		off   uint32
		shift uint
	}{
		{0, false, 0x0900, 0},
		{0, true, 0x0900, 8},
		{1, false, 0x0900, 16},
		{1, true, 0x0900, 24},
		{15, true, 0x091C, 24},
		{63, false, 0x097C, 16},
	} {
		if off, shift := IVAREntry(tt.q, tt.tx); off != tt.off || shift != tt.shift {
			t.Errorf("queue %d tx %v: IVAR 0x%x shift %d, want 0x%x shift %d", tt.q, tt.tx, off, shift, tt.off, tt.shift)
		}
	}
}

func TestEITR(t *testing.T) {
	// EITR 0-23 at 0x820, 24-63 at 0x12300 (Linux IXGBE_EITR).
	for _, tt := range []struct {
		n   int
		off uint32
	}{{0, 0x820}, {23, 0x87C}, {24, 0x12300}, {63, 0x1239C}} {
		if got := EITR(tt.n); got != tt.off {
			t.Errorf("EITR(%d) = 0x%x, want 0x%x", tt.n, got, tt.off)
		}
	}
}
