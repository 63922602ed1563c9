package nictest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

// TxRecovery checks the driver's TX timeout and recovery path: a TX queue that hangs
// (TxHang: the NIC fetches nothing more) or whose write-back never comes
// (TxWritebackLost) is detected within the timeout's bound, counted in TxTimeouts, its
// queued buffers go back to their pool (the frames the NIC never fetched counted in
// TxErrors), and the queue is reset so that traffic flows again. It runs under MSI-X and
// INTx, on queue 0 and on queue 2 of four. Intel only: it injects the Intel model's TX
// faults.
func TxRecovery(t *testing.T, drv Driver) {
	const (
		queued  = 5 // frames queued when the fault strikes
		after   = 8 // frames sent after the recovery
		timeout = 10 * time.Millisecond
	)
	for _, fault := range []intel.Injected{intel.TxHang, intel.TxWritebackLost} {
		for _, mode := range []nic.IRQMode{nic.IRQMSIX, nic.IRQINTx} {
			for _, q := range []int{0, 2} {
				t.Run(fmt.Sprintf("%v/%v/queue%d", fault, mode, q), func(t *testing.T) {
					h := New(t, drv, nic.Config{RxQueues: 4, TxQueues: 4, RxRing: 64, TxRing: 16,
						Interrupts: mode, TxTimeout: timeout})
					pool := h.Port.RxPool(0)
					rng := rand.New(rand.NewPCG(uint64(q), uint64(fault)))
					send := func(n int) int { return sendTx(h, q, n, rng) }
					if err := h.Intel().Inject(intel.Injection{Kind: fault, Queue: q}); err != nil {
						t.Fatal(err)
					}
					free := pool.Avail()
					if k := send(queued); k != queued {
						t.Fatalf("queued %d of %d frames", k, queued)
					}
					sentBefore := h.Intel().Stats().TxFrames
					awaitTxReset(t, h, q, 0)
					st := h.Port.Stats()
					if st.TxTimeouts != 1 {
						t.Errorf("TxTimeouts %d, want 1", st.TxTimeouts)
					}
					if want := uint64(queued) - sentBefore; st.TxErrors != want {
						t.Errorf("TxErrors %d, want the %d frames the NIC never fetched", st.TxErrors, want)
					}
					if tq := Rings(h.Port).TxQueue(q); tq.InFlight() != 0 || pool.Avail() != free {
						t.Errorf("after the reset: %d descriptors in flight, %d buffers free, want %d as before the fault",
							tq.InFlight(), pool.Avail(), free)
					}
					h.Received()
					sent := 0
					testutil.Eventually(t, 2*time.Second, func() bool { sent += send(after - sent); return sent == after },
						"after the recovery the queue took %d of %d frames", sent, after)
					got := 0
					testutil.Eventually(t, 2*time.Second, func() bool { got += len(h.Received()); return got >= after },
						"after the recovery the queue sent %d of %d (model %+v)", h.Intel().Stats().TxFrames-sentBefore, after, h.Intel().Stats())
					testutil.Eventually(t, 2*time.Second, func() bool { h.Port.TxBurst(q, nil); return Rings(h.Port).TxQueue(q).InFlight() == 0 },
						"the frames sent after the recovery are never written back")
					if got != after || pool.Avail() != free {
						t.Errorf("after the recovery %d of %d frames came out, %d buffers free, want %d", got, after, pool.Avail(), free)
					}
					if n := h.Port.Stats().TxTimeouts; n != 1 {
						t.Errorf("TxTimeouts %d after the recovery, want 1", n)
					}
				})
			}
		}
	}
}

// sendTx queues n 64-byte frames on TX queue q (buffers from RX queue 0's pool) and
// returns how many the ring took.
func sendTx(h *Harness, q, n int, rng *rand.Rand) int {
	pool := h.Port.RxPool(0)
	bufs := make([]*nic.Buf, n)
	for i := range bufs {
		bufs[i] = pool.Get()
		f := Frame(rng, Broadcast, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 7, 9, 64)
		bufs[i].SetLen(copy(bufs[i].Data(), f))
	}
	k := h.Port.TxBurst(q, bufs)
	for _, b := range bufs[k:] {
		b.Free()
	}
	return k
}

// awaitTxReset polls TX queue q (an empty burst runs the hang check) until the port has
// counted more than before TX timeouts, that is until the driver reset a hung queue.
func awaitTxReset(t *testing.T, h *Harness, q int, before uint64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		h.Port.TxBurst(q, nil)
		return h.Port.Stats().TxTimeouts > before
	}, "no TX timeout on queue %d (model %+v)", q, h.Intel().Stats())
}
