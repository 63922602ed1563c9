package modelrig

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// Flows is the number of UDP flows a probe sends, one frame each: enough that RSS spreads
// them over every queue.
const Flows = 64

// Probe sends one frame of every flow into port 0, the next of seqs (the next sequence
// number per flow, advanced) and of *sent (the frames sent so far, advanced), waits up to
// timeout for the rig to settle and reports whether every probe frame came out. An error
// says that an RX queue received none of them while nothing was lost: the probe no longer
// covers every queue.
func (r *Rig) Probe(seqs *[Flows]uint64, sent *uint64, timeout time.Duration) (bool, error) {
	var buf [FrameLen]byte
	before := r.Account(*sent)
	rxq := r.QueueRx()
	for f := 0; f < Flows; f++ {
		r.Pair.Far[0].Send(FlowFrame(buf[:], f, seqs[f]))
		seqs[f]++
		*sent++
	}
	if !testutil.WaitFor(timeout, func() bool { return r.Settled(*sent) }) {
		return false, nil
	}
	after := r.Account(*sent)
	for q, n := range r.QueueRx() {
		if n == rxq[q] && after.Lost() == before.Lost() {
			return false, fmt.Errorf("probe of %d flows: rx queue %d got none of them: the probe does not cover every queue", Flows, q)
		}
	}
	return after.Received-before.Received == Flows, nil
}
