package intel

import "time"

// clockExt turns SYSTIM readings into one continuous clock in nanoseconds, as Linux's
// and DPDK's timecounters do: SYSTIM is a 64-bit count of 2^-shift ns, so its time in ns
// wraps every 2^(64−shift) ns (the 82576: 2^45 ns, 9.8 h; the 82599 at 10 Gb/s: 2^43 ns,
// 2.4 h). A reading's time is the base reading's plus the raw difference, taken modulo
// 2^64 before it is shifted, plus the whole number of wraps that puts it nearest to the
// host clock's time since the base reading (the two clocks agree to a few hundred ppm,
// far within the half period that decides). Every SYSTIM read moves the base; stamps,
// which are older, are placed against it. See docs/design.md, "Device clock: wraps,
// link speed, drift".
type clockExt struct {
	set      bool
	shift    uint
	baseRaw  uint64 // a SYSTIM value less a fraction of a ns
	baseNs   int64  // its time
	baseHost int64  // host time of the reading
}

// hostEpoch is the origin of hostNow.
var hostEpoch = time.Now()

// hostNow is the host's monotonic clock in ns.
func hostNow() int64 { return int64(time.Since(hostEpoch)) }

// start makes raw, read at host time host, the base: its time is raw's in ns (the
// clock's own origin), or at, when at is given (continuing a clock whose rate changed).
func (c *clockExt) start(raw uint64, host int64, shift uint, at *int64) {
	c.set, c.shift, c.baseHost = true, shift, host
	c.baseRaw = raw &^ (1<<shift - 1)
	c.baseNs = int64(raw >> shift)
	if at != nil {
		c.baseRaw, c.baseNs = raw, *at
	}
}

// ns is the time of SYSTIM value raw, seen at host time host.
func (c *clockExt) ns(raw uint64, host int64) int64 {
	period := int64(1) << (64 - c.shift)
	dn := int64((raw - c.baseRaw) >> c.shift) // [0, period)
	k := floorDiv(host-c.baseHost-dn+period/2, period)
	return c.baseNs + dn + k*period
}

// advance makes raw, a SYSTIM reading at host time host, the base and returns its time.
func (c *clockExt) advance(raw uint64, host int64) int64 {
	ns := c.ns(raw, host)
	c.baseRaw += uint64(ns-c.baseNs) << c.shift // whole ns: no rounding accumulates
	c.baseNs, c.baseHost = ns, host
	return ns
}

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
