package modelrig

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

// TestProbeLateQueue replays the soak's "rx queue N got none of the 64 probe flows"
// (issue 28) on every driver in both interrupt modes. RxUnpostedDD write-backs the driver
// refuses are RxErrors with no frame behind them, so the account's RX link (placed minus
// received at most the refusals) has as much slack as there were such faults: the account
// settles while that many frames still wait in an RX ring for a poll thread. Here the
// thread is late on queue 1 for as long as the test holds it: the probe must wait for its
// frames, not report the queue empty, and every flow must be counted on the queue the
// Toeplitz hash of the key the port was opened with predicts.
func TestProbeLateQueue(t *testing.T) {
	const (
		queues = 4
		held   = 1
		wait   = 10 * time.Second // bounds every wait; only a failure takes it
	)
	for _, drv := range Drivers {
		for _, mode := range []nic.IRQMode{nic.IRQINTx, nic.IRQMSIX} {
			t.Run(drv.Name+"-"+mode.String(), func(t *testing.T) {
				threads := 1
				if mode == nic.IRQMSIX {
					threads = 2
				}
				r := New(t, Config{Driver: drv, Queues: queues, Ring: 256, Interrupts: mode,
					TxTimeout: 20 * time.Millisecond, PollThreads: threads})
				want := r.predicted()
				// The slack: a fake completion on every queue at a time, each refused, until
				// there are more refusals than the probe sends to the held queue.
				for errs := uint64(0); errs <= want[held]; {
					for q := 0; q < queues; q++ {
						if err := r.Pair.Models[0].Inject(intel.Injection{Kind: intel.RxUnpostedDD, Queue: q}); err != nil {
							t.Fatal(err)
						}
					}
					errs += queues
					if !testutil.WaitFor(wait, func() bool { return r.Ports[0].Stats().RxErrors == errs }) {
						t.Fatalf("%d RxErrors, want %d", r.Ports[0].Stats().RxErrors, errs)
					}
				}
				r.HoldRx(held, true)
				type result struct {
					done bool
					err  error
				}
				res := make(chan result, 1)
				go func() {
					var seqs [Flows]uint64
					var sent uint64
					done, err := r.Probe(&seqs, &sent, wait)
					res <- result{done, err}
				}()
				// Every frame but the held queue's comes out, and the account settles.
				if !testutil.WaitFor(wait, func() bool { return r.Settled(Flows) }) {
					r.HoldRx(held, false)
					t.Fatalf("the account does not settle with rx queue %d held: %s", held, r.ProblemText(Flows))
				}
				var got result
				select {
				case got = <-res:
				case <-time.After(time.Second): // the probe waits for the held frames
					r.HoldRx(held, false)
					got = <-res
				}
				r.HoldRx(held, false)
				if got.err != nil || !got.done {
					t.Fatalf("probe with rx queue %d late: done %v, %v", held, got.done, got.err)
				}
				var per []uint64
				if !testutil.WaitFor(wait, func() bool { per = r.QueueRx(); return sum(per) == Flows }) {
					t.Fatalf("the dataplane took %v frames per queue, want %v", per, want)
				}
				for q := range per {
					if per[q] != want[q] {
						t.Errorf("rx queue %d: the dataplane took %d frames, Toeplitz predicts %d (%v, want %v)", q, per[q], want[q], per, want)
					}
				}
				r.Stop(t, Flows, false)
				r.Close(t, false)
			})
		}
	}
}

func sum(n []uint64) uint64 {
	var s uint64
	for _, v := range n {
		s += v
	}
	return s
}

// TestProbeSeesRSSChange checks that the probe's RSS check can fail: with the redirection
// table rewritten behind the driver (every entry to queue 0), the probe reports a queue
// that got other than its predicted share.
func TestProbeSeesRSSChange(t *testing.T) {
	for _, drv := range Drivers {
		for _, mode := range []nic.IRQMode{nic.IRQINTx, nic.IRQMSIX} {
			t.Run(drv.Name+"-"+mode.String(), func(t *testing.T) {
				r := New(t, Config{Driver: drv, Queues: 4, Ring: 256, Interrupts: mode,
					TxTimeout: 20 * time.Millisecond, PollThreads: 1})
				bar, err := r.Pair.Models[0].Device().Region(0)
				if err != nil {
					t.Fatal(err)
				}
				for i := uint32(0); i < 32; i++ {
					bar.Write32(intelnic.RETA+4*i, 0)
				}
				var seqs [Flows]uint64
				var sent uint64
				if _, err := r.Probe(&seqs, &sent, 10*time.Second); err == nil {
					t.Fatal("the probe found the flows on their predicted queues with every RETA entry on queue 0")
				} else {
					t.Log(err)
				}
				r.Stop(t, sent, false)
				r.Close(t, false)
			})
		}
	}
}
