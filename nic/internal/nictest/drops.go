package nictest

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
)

// QueueDrops checks drop accounting: frames that find no free descriptor on a queue
// (SRRCTL.DROP_EN) are counted by the NIC per queue (QPRDC, RQDPC), not in MPC, and
// must show up in the port's RxMissed. Intel only: it reads the Intel model's counters.
func QueueDrops(t *testing.T, drv Driver) {
	const ring, sent = 16, 40
	h := New(t, drv, nic.Config{RxRing: ring, TxRing: ring, Interrupts: nic.IRQNone})
	h.Send(sent) // nobody receives: the ring fills, the rest is dropped
	testutil.Eventually(t, 2*time.Second, func() bool {
		st := h.Intel().Stats()
		return st.RxFrames+st.QueueDrops+st.Missed >= sent
	}, "model took %+v of %d frames", h.Intel().Stats(), sent)
	st := h.Intel().Stats()
	if st.QueueDrops == 0 {
		t.Fatalf("model dropped nothing per queue: %+v", st)
	}
	if got, want := h.Port.Stats().RxMissed, st.QueueDrops+st.Missed; got != want {
		t.Errorf("RxMissed %d, want %d (%d per-queue drops, %d packet-buffer misses)", got, want, st.QueueDrops, st.Missed)
	}
	h.Consume(0)
}
