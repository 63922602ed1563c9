package igbvf

import (
	"testing"

	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/sim/intel"
)

// driver is this driver on the VF model, for the shared suites. The suites reflect
// frames with the peer's source address, which a VF under the PF's MAC anti-spoof check
// may not send (on Linux: "ip link set PF vf N spoofchk off"); the check itself is
// TestAntiSpoof's.
var driver = nictest.Driver{
	Open:      nictest.OpenWith(Open, (*Port).intelCore),
	Family:    nictest.IGBVF(igbvf.Config{NoAntiSpoof: true}),
	SpeedMbps: 1000,
	MaxMTU:    MaxMTU,
}

// TestDriver runs the conformance suites (see nictest.Run).
func TestDriver(t *testing.T) { nictest.Run(t, driver) }

// TestDriverQEMUQuirks runs them on an engine with QEMU igb's quirks.
func TestDriverQEMUQuirks(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{NoAntiSpoof: true, Quirks: intel.QEMUQuirks()})
	nictest.Run(t, drv)
}

// TestDocumentedAPI checks that go doc lists the port's methods.
func TestDocumentedAPI(t *testing.T) {
	nictest.DocumentsPort(t, "IRQKind", "LinkChanges", "Device", "OnRecoverNeeded", "Recover", "RecoverBackoff")
}

// BenchmarkForward is the driver-only forwarding cost; see nic/ixgbe.
func BenchmarkForward(b *testing.B) { nictest.BenchmarkForwardBatches(b, driver) }
