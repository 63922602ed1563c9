package igb

import (
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// driver is this driver on the model's 82576 flavour, for the shared suites.
var driver = nictest.Driver{
	Open:      nictest.OpenWith(Open, (*Port).intelCore),
	RSSKey:    RSSKey[:],
	Family:    nictest.Intel(intel.X82576, intel.Quirks{}),
	SpeedMbps: 1000,
	MaxMTU:    MaxMTU,
}

// TestDriver runs the conformance suites (see nictest.Run).
func TestDriver(t *testing.T) { nictest.Run(t, driver) }

// TestDriverQEMUQuirks runs the suites on a model with QEMU igb's quirks: RSS only with
// RXCSUM.PCSD, throttled MSI-X messages that arrive after their cause was masked, runts
// padded on receive.
func TestDriverQEMUQuirks(t *testing.T) {
	drv := driver
	drv.Family = nictest.Intel(intel.X82576, intel.QEMUQuirks())
	nictest.Run(t, drv)
}

// TestDriverLinkPaths runs the suites on the ports whose link the copper path alone does
// not bring up: a SerDes part (the PCS) and a port handed over with its PHY powered down.
func TestDriverLinkPaths(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  intel.Config
	}{
		{"serdes", intel.Config{Flavor: intel.X82576, DeviceID: 0x10E7}},
		{"powered down", intel.Config{Flavor: intel.X82576, PoweredDown: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			drv := driver
			drv.Family = nictest.IntelWith(tt.cfg)
			nictest.Run(t, drv)
		})
	}
}

// BenchmarkForward is the driver-only forwarding cost; see nic/ixgbe.
func BenchmarkForward(b *testing.B) { nictest.BenchmarkForwardBatches(b, driver) }

func TestMatch(t *testing.T) {
	for _, id := range []uint16{0x10C9, 0x10E6, 0x10E7, 0x10E8, 0x1526, 0x150A, 0x1518, 0x150D} {
		if !Match(VendorIntel, id) {
			t.Errorf("%04x not matched", id)
		}
	}
	for _, id := range unsupported {
		if Match(VendorIntel, id) {
			t.Errorf("%04x matched", id)
		}
	}
}

// unsupported are device ids the driver must refuse: I350, I210, I211, the 82575 and
// other families' parts.
var unsupported = []uint16{0x1521, 0x1522, 0x1523, 0x1524, 0x1533, 0x1536, 0x1537, 0x1538, 0x157B, 0x157C, 0x1539, 0x10A7, 0x10FB, 0x100E, 0x10D3}

// TestOpenUnsupported checks that an I350, I210 or I211 is refused with an error naming
// it and listing what is supported.
func TestOpenUnsupported(t *testing.T) {
	for _, id := range []uint16{0x1521, 0x1533, 0x1539} {
		m, err := intel.New(intel.Config{Strict: true, Flavor: intel.X82576, DeviceID: id})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(m.PCI(), nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
		testutil.ErrorIs(t, err, nic.ErrNoDriver, fmt.Sprintf("unsupported device 8086:%04x", id))
		testutil.ErrorContains(t, err, "supported are", "8086:10c9 (82576)")
		m.Close()
	}
}

func TestITRValue(t *testing.T) {
	nictest.CheckITR(t, layout.ITR.Value, i82576.EitrCntIgnr, map[time.Duration]uint32{
		0:                      0,
		time.Nanosecond:        1 << 2,
		100 * time.Microsecond: 100 << 2,
		time.Second:            0x1fff << 2,
		MaxITR:                 0x1fff << 2, // the exported limit is the field's largest value
		MaxITR - ITRUnit:       0x1ffe << 2, // and one unit less is one step less
	})
}

// TestDocumentedAPI checks that go doc lists the port's methods: nic.Port's, the receive
// filter's and the timesync unit's.
func TestDocumentedAPI(t *testing.T) {
	nictest.DocumentsPort(t, "IRQKind", "LinkChanges", "Device", "Pools", "SetMAC", "SetMulticast",
		"EnableTimesync", "DeviceTime", "TxTimestamp", "RxTimestamp")
}
