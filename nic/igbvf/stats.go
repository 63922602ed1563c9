package igbvf

import (
	"sync"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
)

// counterRegs are the VF's statistics registers the port totals: 32-bit counters that
// wrap and are not cleared by a read, in the order counters.read returns them.
var counterRegs = [4]uint32{i82576.VFGPRC, i82576.VFGORC, i82576.VFGPTC, i82576.VFGOTC}

// counterMaxRate is the most each of counterRegs can count in a second: frames and bytes
// at 10 Gb/s, ten times the 82576's line rate (a VF's traffic to another VF of the port
// is switched inside the NIC, not limited by the wire). A register that reads less than
// it did, by more than this rate over the time since the last read could have wrapped
// it, was cleared, not wrapped.
var counterMaxRate = [4]float64{14.88e6, 1.25e9, 14.88e6, 1.25e9}

// counters reads the VF's statistics registers as deltas since the last read. The port
// reads them at least every watchInterval (Linux's igbvf every 2 s from its watchdog),
// so that one wrap at most comes between two reads: the byte counters wrap in 34 s at
// 1 Gb/s.
//
// A PF reset may clear them (QEMU's igb_reset does): a register that reads less than it
// did is then not a wrap. While the port handles a PF event (from the moment it finds
// one until its re-initialisation read them again) a lower value counts from zero;
// at other times a drop too large to be a wrap at counterMaxRate does (a read between
// the PF's reset and the port finding it).
type counters struct {
	bar     interface{ Read32(uint32) uint32 }
	mu      sync.Mutex
	last    [len(counterRegs)]uint32
	at      time.Time // when last was read
	rebase  bool      // the next read only takes the registers' values (at open: what an earlier user counted is not the port's)
	cleared bool      // a PF event is being handled: the registers may have been cleared
}

// pfEvent marks the registers as possibly cleared, until settled.
func (c *counters) pfEvent() {
	c.mu.Lock()
	c.cleared = true
	c.mu.Unlock()
}

// settled ends a PF event: the registers were read after the VF's handshake.
func (c *counters) settled() {
	c.mu.Lock()
	c.cleared = false
	c.mu.Unlock()
}

// read returns what the registers counted since the last read.
func (c *counters) read() (rxp, rxb, txp, txb uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(c.at).Seconds()
	c.at = now
	var d [len(counterRegs)]uint64
	for i, off := range counterRegs {
		v := c.bar.Read32(off)
		d[i] = c.delta(i, v, elapsed)
		c.last[i] = v
	}
	if c.rebase {
		c.rebase = false
		return 0, 0, 0, 0
	}
	return d[0], d[1], d[2], d[3]
}

// delta is what register i counted since it read c.last[i], elapsed seconds ago, now
// that it reads v (see counters).
func (c *counters) delta(i int, v uint32, elapsed float64) uint64 {
	last := c.last[i]
	if v >= last {
		return uint64(v - last)
	}
	wrapped := uint64(v - last) // 32-bit arithmetic: the count across one wrap
	if c.cleared || float64(wrapped) > counterMaxRate[i]*elapsed {
		return uint64(v)
	}
	return wrapped
}
