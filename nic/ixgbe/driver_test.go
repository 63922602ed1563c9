package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// driver is this driver on the 82599 model, for the shared suites.
var driver = nictest.Driver{
	Open:      nictest.OpenWith(Open, (*Port).intelCore),
	RSSKey:    RSSKey[:],
	Family:    nictest.Intel(intel.X82599, intel.Quirks{}),
	SpeedMbps: 10000,
	MaxMTU:    MaxMTU,
	MaxFrame:  i82599.MaxFrameFCS - 4,
}

// TestDriver runs the conformance suites (see nictest.Run).
func TestDriver(t *testing.T) { nictest.Run(t, driver) }

// TestDocumentedAPI checks that go doc lists the port's methods: nic.Port's, the receive
// filter's and the timesync unit's.
func TestDocumentedAPI(t *testing.T) {
	nictest.DocumentsPort(t, "IRQKind", "LinkChanges", "Device", "Pools", "SetMAC", "SetMulticast",
		"EnableTimesync", "DeviceTime", "TxTimestamp", "RxTimestamp")
}
