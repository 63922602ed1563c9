package config

import (
	"time"

	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/nic/igbvf"
	"github.com/uiod/uiod/nic/ixgbe"
)

// eitrRange is the interval a NIC's EITR register can hold, in steps of unit up to max.
type eitrRange struct {
	chip      string
	unit, max time.Duration
}

// The EITR interval ranges, as the drivers export them.
var (
	eitr82599 = eitrRange{"82599 (ixgbe)", ixgbe.ITRUnit, ixgbe.MaxITR}
	eitr82576 = eitrRange{"82576 (igb)", igb.ITRUnit, igb.MaxITR}
	eitrVF    = eitrRange{"82576 VF (igbvf)", igbvf.ITRUnit, igbvf.MaxITR}
)

// checkITR refuses an itr the port's NIC cannot program (the driver would clamp it).
// With nic auto on real hardware the NIC is known only at open, so the range every
// supported NIC takes applies; sim ports model the 82599.
func checkITR(errs *fieldErrors, path string, p *Port) {
	r := eitr82599
	switch {
	case p.NIC == NICIgb:
		r = eitr82576
	case p.NIC == NICIgbvf:
		r = eitrVF
	case p.NIC == NICAuto && p.Driver != DriverSim:
		if p.ITR > r.max {
			errs.add(path, p.ITR, "beyond the interrupt throttle range of the %s, [0, %v] in %v steps (set nic: igb for the 82576's [0, %v])",
				r.chip, r.max, r.unit, eitr82576.max)
		}
		return
	}
	if p.ITR > r.max {
		errs.add(path, p.ITR, "beyond the %s's interrupt throttle range, [0, %v] in %v steps", r.chip, r.max, r.unit)
	}
}
