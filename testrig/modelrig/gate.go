package modelrig

import (
	"sync/atomic"

	"github.com/uiod/uiod/nic"
)

// gate is port 0 as the rig's dataplane sees it: an RX queue the test holds (HoldRx)
// yields nothing, so that its frames wait in the ring as they do behind a poll thread the
// machine's load keeps off the CPU.
type gate struct {
	nic.Port
	held atomic.Uint64 // bit q: RX queue q is held
}

// RxBurst implements nic.Port: nothing from a held queue.
func (g *gate) RxBurst(q int, bufs []*nic.Buf) int {
	if g.held.Load()&(1<<q) != 0 {
		return 0
	}
	return g.Port.RxBurst(q, bufs)
}

// HoldRx stops (hold true) or lets again (false) the dataplane take frames from port 0's
// RX queue q: a held queue's frames stay in its ring, counted as placed by the model and
// not as received by the dataplane.
func (r *Rig) HoldRx(q int, hold bool) {
	for {
		old := r.gate.held.Load()
		v := old &^ (1 << q)
		if hold {
			v |= 1 << q
		}
		if r.gate.held.CompareAndSwap(old, v) {
			return
		}
	}
}
