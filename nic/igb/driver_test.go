package igb

import (
	"testing"
	"time"

	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// driver is this driver on the model's 82576 flavour, for the shared suites.
var driver = nictest.Driver{
	Open:      nictest.OpenWith(Open),
	Flavor:    intel.X82576,
	SpeedMbps: 1000,
}

// TestDriver runs the suites every Intel driver must pass (see nictest.Run).
func TestDriver(t *testing.T) { nictest.Run(t, driver) }

// BenchmarkForward is the driver-only forwarding cost; see nic/ixgbe.
func BenchmarkForward(b *testing.B) { nictest.BenchmarkForwardBatches(b, driver) }

func TestMatch(t *testing.T) {
	for _, id := range []uint16{0x10C9, 0x10E6, 0x1521, 0x1533, 0x1539} {
		if !Match(VendorIntel, id) {
			t.Errorf("%04x not matched", id)
		}
	}
	for _, id := range []uint16{0x10FB, 0x100E, 0x10D3} {
		if Match(VendorIntel, id) {
			t.Errorf("%04x matched", id)
		}
	}
}

func TestIVARLayout(t *testing.T) {
	tests := []struct {
		fam   family
		q     int
		tx    bool
		off   uint32
		shift uint
	}{
		{family82576, 0, false, 0x1700, 0},
		{family82576, 0, true, 0x1700, 8},
		{family82576, 7, false, 0x171C, 0},
		{family82576, 8, false, 0x1700, 16},
		{family82576, 9, true, 0x1704, 24},
		{familyI350, 0, false, 0x1700, 0},
		{familyI350, 1, false, 0x1700, 16},
		{familyI350, 3, true, 0x1704, 24},
	}
	for _, tt := range tests {
		off, shift := tt.fam.ivarEntry(tt.q, tt.tx)
		if off != tt.off || shift != tt.shift {
			t.Errorf("family %d queue %d tx %v: IVAR 0x%x shift %d, want 0x%x shift %d", tt.fam, tt.q, tt.tx, off, shift, tt.off, tt.shift)
		}
	}
}

func TestITRValue(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want uint32
	}{
		{0, 0},
		{time.Nanosecond, 1 << 2},
		{100 * time.Microsecond, 100 << 2},
		{time.Second, 0x1fff << 2},
	}
	for _, tt := range tests {
		if got := itrValue(tt.d) &^ eitrCntIgnr; got != tt.want {
			t.Errorf("itrValue(%v) = %#x, want %#x", tt.d, got, tt.want)
		}
	}
}

func TestMaxQueues(t *testing.T) {
	tests := []struct {
		device uint16
		want   int
	}{
		{0x10C9, 16}, // 82576
		{0x1521, 8},  // I350
		{0x1533, 4},  // I210
		{0x1539, 2},  // I211
	}
	for _, tt := range tests {
		if got := deviceIDs[tt.device].maxQueues(); got != tt.want {
			t.Errorf("%04x: %d queues, want %d", tt.device, got, tt.want)
		}
	}
}
