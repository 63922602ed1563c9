package virtio

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestTxStatsWithoutReclaim forwards bursts back out of the port and reads the counters
// with no later TxBurst to reclaim the last one (an l2fwd port whose traffic stopped):
// every frame the device was given counts as sent, and the in-flight accounting holds
// (the next bursts still find room).
func TestTxStatsWithoutReclaim(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{RxRing: 64, TxRing: 64}, Options{})
	var bufs [16]*nic.Buf
	total := 0
	for round := 0; round < 20; round++ {
		h.Send(len(bufs))
		got := 0
		if !testutil.Eventually(t, 5*time.Second, func() bool {
			got += p.RxBurst(0, bufs[got:])
			return got == len(bufs)
		}, "round %d: received %d of %d", round, got, len(bufs)) {
			t.FailNow()
		}
		if n := p.TxBurst(0, bufs[:got]); n != got {
			t.Fatalf("round %d: TxBurst took %d of %d", round, n, got)
		}
		total += got
		st := p.Stats()
		if st.TxPackets != uint64(total) || st.TxBytes != 64*uint64(total) || st.TxErrors != 0 {
			t.Fatalf("round %d: stats %+v, want %d frames of 64 bytes sent", round, st, total)
		}
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return h.Model.Counters().WireOut == uint64(total) },
		"model sent %d of %d", h.Model.Counters().WireOut, total)
}
