package virtio

import (
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/gate"
)

// gatedQueue is a receive or transmit queue: a burst behind a gate.
type gatedQueue interface {
	*rxQueue | *txQueue
	burst(bufs []*nic.Buf) int
	queueGate() *gate.Gate
}

// gatedBurst runs q's burst inside its gate, or returns 0 when a recovery holds it.
func gatedBurst[Q gatedQueue](q Q, bufs []*nic.Buf) int {
	g := q.queueGate()
	if !g.Enter() {
		return 0
	}
	n := q.burst(bufs)
	g.Leave()
	return n
}

func (q *rxQueue) queueGate() *gate.Gate { return &q.gate }
func (q *txQueue) queueGate() *gate.Gate { return &q.gate }
