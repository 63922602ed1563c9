package hw_test

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
)

func TestIVAREntry(t *testing.T) {
	// 82576 (8.8.15, Linux igb_assign_vector): queue q's RX entry is byte (q&8)>>2 of
	// IVAR(q&7). 82599 (8.2.3.10.13, Linux ixgbe_set_ivar): byte 2·(q&1) of IVAR(q>>1).
	// The TX entry is the byte above the RX one.
	for _, tt := range []struct {
		part  string
		entry func(q int, tx bool) (uint32, uint)
		q     int
		tx    bool
		off   uint32
		shift uint
	}{
		{"82576", i82576.IVAREntry, 0, false, 0x1700, 0},
		{"82576", i82576.IVAREntry, 0, true, 0x1700, 8},
		{"82576", i82576.IVAREntry, 7, false, 0x171C, 0},
		{"82576", i82576.IVAREntry, 8, false, 0x1700, 16},
		{"82576", i82576.IVAREntry, 9, true, 0x1704, 24},
		{"82599", i82599.IVAREntry, 0, false, 0x0900, 0},
		{"82599", i82599.IVAREntry, 0, true, 0x0900, 8},
		{"82599", i82599.IVAREntry, 1, false, 0x0900, 16},
		{"82599", i82599.IVAREntry, 1, true, 0x0900, 24},
		{"82599", i82599.IVAREntry, 15, true, 0x091C, 24},
		{"82599", i82599.IVAREntry, 63, false, 0x097C, 16},
	} {
		if off, shift := tt.entry(tt.q, tt.tx); off != tt.off || shift != tt.shift {
			t.Errorf("%s queue %d tx %v: IVAR 0x%x shift %d, want 0x%x shift %d", tt.part, tt.q, tt.tx, off, shift, tt.off, tt.shift)
		}
	}
}

func TestPerIndexRegisters(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want uint32
	}{
		{"82599 EITR(0)", i82599.EITR(0), 0x00820},
		{"82599 EITR(23)", i82599.EITR(23), 0x0087C},
		{"82599 EITR(24)", i82599.EITR(24), 0x12300},
		{"82599 EITR(63)", i82599.EITR(63), 0x1239C},
		{"82599 RXDCTL(1)", i82599.RXDCTL(1), 0x01068},
		{"82599 SRRCTL(15)", i82599.SRRCTL(15), 0x0213C},
		{"82599 QPRDC(15)", i82599.QPRDC(15), 0x017F0},
		{"82599 QBTC(1)", i82599.QBTC(1), 0x08708},
		{"82576 EITR(24)", i82576.EITR(24), 0x016E0},
		{"82576 SRRCTL(1)", i82576.SRRCTL(1), 0x0C04C},
		{"82576 RQDPC(3)", i82576.RQDPC(3), 0x0C0F0},
		{"82576 TXDCTL(2)", i82576.TXDCTL(2), 0x0E0A8},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = 0x%05x, want 0x%05x", tt.name, tt.got, tt.want)
		}
	}
}
