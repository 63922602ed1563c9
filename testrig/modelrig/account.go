package modelrig

import (
	"fmt"
	"strings"

	"github.com/uiod/uiod/sim/intel"
)

// Account is where every frame sent into port 0 went.
type Account struct {
	Sent, Received uint64
	Rx, Tx         intel.Stats // models 0 (receiving) and 1 (transmitting)
	RxErrors       uint64      // write-backs port 0's driver refused
	DPRx, DPTx     uint64      // the dataplane's direction 0 → 1: received, accepted by TX
	DPDrops        uint64      // refused by a full TX ring
	Stuck          uint64      // descriptors port 1's TX queues have not fetched
	Discarded      uint64      // frames port 1's driver dropped resetting a hung TX queue
	TxTimeouts     uint64      // TX queue resets of port 1
}

// RxLost is what the receiving model counts as not placed in a ring.
func (a Account) RxLost() uint64 {
	return a.Rx.Dropped + a.Rx.Missed + a.Rx.QueueDrops + a.Rx.RxOff + a.Rx.BadFrames + a.Rx.Filtered +
		a.Rx.NoBusMaster + a.Rx.DMAFaults // an RX DMA fault loses the frame
}

// TxLost is what the transmitting model counts as taken from a ring but not sent.
func (a Account) TxLost() uint64 { return a.Tx.TxErrors + a.Tx.TxLinkDown }

// Lost is every frame the counters say stayed behind, for pacing (it may count a refused
// write-back that was no frame).
func (a Account) Lost() uint64 {
	return a.RxLost() + a.RxErrors + a.DPDrops + a.Stuck + a.Discarded + a.TxLost() + a.Tx.WireLost
}

// Problems returns the links of the chain sent → received that do not hold: every frame
// reached the NIC; was placed in a ring or counted by the model; was handed to the
// dataplane or refused (and counted) by the driver; was accepted by a TX ring or dropped
// (and counted) by the dataplane; was sent, counted by the model, left unfetched in a
// hung queue or discarded by its reset; and came out of the wire or was counted by it.
// None holds while frames are still on their way, so waiting for none is waiting for the
// end — with one exception: the link from placed to handed over is an inequality, since
// RxErrors also counts refused write-backs that were no frame (each RxUnpostedDD fault's
// fake completion), and as many frames as there were such faults can still wait in an RX
// ring while every link holds. Probe therefore waits for its own frames.
func (a Account) Problems() []string {
	var p []string
	if a.Rx.WireIn != a.Sent {
		p = append(p, fmt.Sprintf("sent %d frames, the NIC saw %d", a.Sent, a.Rx.WireIn))
	}
	if a.Rx.WireIn != a.Rx.RxFrames+a.RxLost() {
		p = append(p, fmt.Sprintf("the NIC saw %d frames, placed %d and counts %d lost", a.Rx.WireIn, a.Rx.RxFrames, a.RxLost()))
	}
	if a.Rx.RxFrames < a.DPRx || a.Rx.RxFrames-a.DPRx > a.RxErrors {
		p = append(p, fmt.Sprintf("the NIC placed %d frames, the dataplane received %d, the driver refused %d",
			a.Rx.RxFrames, a.DPRx, a.RxErrors))
	}
	if a.DPRx != a.DPTx+a.DPDrops {
		p = append(p, fmt.Sprintf("the dataplane received %d frames, sent %d, dropped %d", a.DPRx, a.DPTx, a.DPDrops))
	}
	if a.DPTx != a.Tx.TxFrames+a.TxLost()+a.Stuck+a.Discarded {
		p = append(p, fmt.Sprintf("the dataplane sent %d frames, the NIC sent %d, counts %d lost, left %d unfetched, the driver discarded %d",
			a.DPTx, a.Tx.TxFrames, a.TxLost(), a.Stuck, a.Discarded))
	}
	if a.Tx.TxFrames != a.Received+a.Tx.WireLost {
		p = append(p, fmt.Sprintf("the NIC sent %d frames, %d came out, the wire lost %d", a.Tx.TxFrames, a.Received, a.Tx.WireLost))
	}
	return p
}

// Account reads every counter, for sent frames sent into port 0.
func (r *Rig) Account(sent uint64) Account {
	a := Account{Sent: sent, Rx: r.Pair.Models[0].Stats(), Tx: r.Pair.Models[1].Stats()}
	r.mu.Lock()
	a.Received = r.received
	r.mu.Unlock()
	a.RxErrors = r.Ports[0].Stats().RxErrors
	st1 := r.Ports[1].Stats()
	a.Discarded, a.TxTimeouts = st1.TxErrors, st1.TxTimeouts // every frame is valid: TxErrors are all discards
	for _, q := range r.DP.Stats() {
		if strings.HasPrefix(q.Name, "0to1") {
			a.DPRx += q.RxPackets
			a.DPTx += q.TxPackets
			a.DPDrops += q.Drops
		}
	}
	bar, _ := r.Pair.Models[1].Device().Region(0)
	for q := 0; q < r.cfg.Queues; q++ {
		a.Stuck += uint64((bar.Read32(r.cfg.Driver.TDT(q)) - bar.Read32(r.cfg.Driver.TDH(q))) % uint32(r.cfg.Ring))
	}
	return a
}

// Unaccounted is how many of sent frames are neither out of port 1 nor counted lost.
func (r *Rig) Unaccounted(sent uint64) uint64 {
	a := r.Account(sent)
	return sent - min(sent, a.Received+a.Lost())
}

// Settled reports whether every one of sent frames is accounted for.
func (r *Rig) Settled(sent uint64) bool { return len(r.Account(sent).Problems()) == 0 }

// ProblemText is Problems of the current account, joined for a message.
func (r *Rig) ProblemText(sent uint64) string {
	return strings.Join(r.Account(sent).Problems(), "; ")
}
