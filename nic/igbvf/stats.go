package igbvf

import (
	"sync"

	"github.com/uiod/uiod/internal/hw/i82576"
)

// counters reads the VF's statistics registers, which count and wrap at 32 bits, as
// deltas since the last read.
type counters struct {
	bar                    interface{ Read32(uint32) uint32 }
	mu                     sync.Mutex
	gprc, gorc, gptc, gotc uint32
	rebase                 bool // the next read only takes the registers' values
}

// rebaseNext makes the next read take the registers' values as its base (at open, and
// after a VF reset, which may have cleared them).
func (c *counters) rebaseNext() {
	c.mu.Lock()
	c.rebase = true
	c.mu.Unlock()
}

func (c *counters) read() (rxp, rxb, txp, txb uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := func(off uint32, last *uint32) uint64 {
		v := c.bar.Read32(off)
		delta := v - *last
		*last = v
		return uint64(delta)
	}
	rxp, rxb = d(i82576.VFGPRC, &c.gprc), d(i82576.VFGORC, &c.gorc)
	txp, txb = d(i82576.VFGPTC, &c.gptc), d(i82576.VFGOTC, &c.gotc)
	if c.rebase {
		c.rebase = false
		return 0, 0, 0, 0
	}
	return rxp, rxb, txp, txb
}
