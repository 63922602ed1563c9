package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
)

// driver is this driver on the 82599 model, for the shared suites.
var driver = nictest.Driver{
	Open:      nictest.OpenWith(Open),
	Flavor:    intel.X82599,
	SpeedMbps: 10000,
	MaxFrame:  maxFrameFCS - 4,
}

// TestDriver runs the suites every Intel driver must pass (see nictest.Run).
func TestDriver(t *testing.T) { nictest.Run(t, driver) }
