package config

import "time"

// eitrRange is the interval a NIC's EITR register can hold: an interval field of width
// bits counted in units of unit.
type eitrRange struct {
	chip string
	unit time.Duration
	bits uint
}

func (r eitrRange) max() time.Duration { return time.Duration(1<<r.bits-1) * r.unit }

// EITR interval fields: 82599 bits 11:3 in 2.048 µs units at 1 and 10 Gb/s (datasheet
// 8.2.3.5.12; Linux IXGBE_MAX_EITR 0xFF8), 82576 bits 14:2 in 1 µs units (datasheet
// 8.8.12; Linux igb writes usecs<<2).
var (
	eitr82599 = eitrRange{"82599 (ixgbe)", 2048 * time.Nanosecond, 9}
	eitr82576 = eitrRange{"82576 (igb)", time.Microsecond, 13}
)

// checkITR refuses an itr the port's NIC cannot program (the driver would clamp it).
// With nic auto on real hardware the NIC is known only at open, so the range every
// supported NIC takes applies; sim ports model the 82599.
func checkITR(errs *fieldErrors, path string, p *Port) {
	r := eitr82599
	switch {
	case p.NIC == NICIgb:
		r = eitr82576
	case p.NIC == NICAuto && p.Driver != DriverSim:
		if p.ITR > r.max() {
			errs.add(path, p.ITR, "beyond the interrupt throttle range of the %s, [0, %v] in %v steps (set nic: igb for the 82576's [0, %v])",
				r.chip, r.max(), r.unit, eitr82576.max())
		}
		return
	}
	if p.ITR > r.max() {
		errs.add(path, p.ITR, "beyond the %s's interrupt throttle range, [0, %v] in %v steps", r.chip, r.max(), r.unit)
	}
}
