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
// number per flow, advanced) and of *sent (the frames sent so far, advanced), and waits up
// to timeout for each of them to come out of port 1, or for the account to settle with a
// loss counted. It reports whether every probe frame came out.
//
// It waits for its own frames, by flow and sequence number, because a settled account is
// not delivery: the account's RX link has slack (see Account.Problems), within which
// frames still wait in an RX ring behind a poll thread that is late.
//
// On the way it checks the port's RSS state: the frames the receiving model placed on
// each RX queue are the flows the Toeplitz hash of the driver's key sends there, exactly
// when the model lost none of them and at most that many when it lost some. An error
// names the queue that got other than that.
func (r *Rig) Probe(seqs *[Flows]uint64, sent *uint64, timeout time.Duration) (bool, error) {
	if !testutil.WaitFor(timeout, func() bool { return r.rxDrained(*sent) }) {
		return false, nil // frames of an earlier probe still wait in a stalled packet buffer
	}
	before, placed := r.Account(*sent), r.Pair.Models[0].RxQueueFrames(r.cfg.Queues)
	var buf [FrameLen]byte
	var probe [Flows]uint64 // each flow's probe frame
	for f := range Flows {
		probe[f] = seqs[f]
		r.Pair.Far[0].Send(FlowFrame(buf[:], f, seqs[f]))
		seqs[f]++
		*sent++
	}
	all := false
	testutil.WaitFor(timeout, func() bool {
		all = r.delivered(&probe)
		return all || r.Settled(*sent) && r.Account(*sent).Lost() != before.Lost()
	})
	if !testutil.WaitFor(timeout, func() bool { return r.rxDrained(*sent) }) {
		return false, nil
	}
	rxLost := r.Account(*sent).RxLost() != before.RxLost()
	got, want := r.Pair.Models[0].RxQueueFrames(r.cfg.Queues), r.predicted()
	for q := range got {
		got[q] -= placed[q]
	}
	for q := range got {
		if got[q] > want[q] || !rxLost && got[q] != want[q] {
			return false, fmt.Errorf("probe of %d flows: rx queue %d got %d of them, the Toeplitz hash of the port's RSS key sends %d there (per queue %v, predicted %v, frames lost %v): the port's RSS state changed",
				Flows, q, got[q], want[q], got, want, rxLost)
		}
	}
	return all, nil
}

// rxDrained reports whether the receiving model has placed, or counted lost, every frame
// that reached it: none waits in its packet buffer.
func (r *Rig) rxDrained(sent uint64) bool {
	a := r.Account(sent)
	return a.Rx.WireIn == a.Rx.RxFrames+a.RxLost()
}

// delivered reports whether the frame of each flow f with sequence number probe[f] came
// out of port 1.
func (r *Rig) delivered(probe *[Flows]uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for f, seq := range probe {
		if r.next[f] <= seq {
			return false
		}
	}
	return true
}

// predicted returns how many of the probe's flows RSS sends to each RX queue: the queue
// FlowQueue predicts under the driver's key.
func (r *Rig) predicted() []uint64 {
	n := make([]uint64, r.cfg.Queues)
	for f := range Flows {
		n[FlowQueue(r.cfg.Driver.Key, f, r.cfg.Queues)]++
	}
	return n
}
