package intel

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
)

// TestQuirkRSSNeedsPCSD checks that with the QEMU quirk RSS spreads only while
// RXCSUM.PCSD is set (else every frame lands on queue 0), and that the silicon spreads
// either way.
func TestQuirkRSSNeedsPCSD(t *testing.T) {
	for _, c := range []struct {
		quirk, pcsd bool
		wantQ       int
	}{
		{quirk: false, pcsd: false, wantQ: 2},
		{quirk: false, pcsd: true, wantQ: 2},
		{quirk: true, pcsd: false, wantQ: 0},
		{quirk: true, pcsd: true, wantQ: 2},
	} {
		g := newRig(t, Config{Flavor: X82576, Quirks: Quirks{RSSNeedsPCSD: c.quirk}})
		g.initDevice()
		g.setupRX(0, 8, 2048, true)
		g.setupRX(2, 8, 2048, true)
		g.steerTo(2)
		if !c.pcsd {
			g.wr(intelnic.RXCSUM, 0)
		}
		g.peer.Send(frameForMAC(g, 7))
		if h := g.rd(g.rxq(c.wantQ, intelnic.QH)); h != 1 {
			t.Errorf("quirk %v, PCSD %v: queue %d got %d frames, want 1", c.quirk, c.pcsd, c.wantQ, h)
		}
	}
}

// TestQuirkPadRunts checks that a runt from the wire is counted in RUC on silicon and
// padded to 60 bytes and delivered with the QEMU quirk.
func TestQuirkPadRunts(t *testing.T) {
	for _, quirk := range []bool{false, true} {
		g := newRig(t, Config{Quirks: Quirks{PadRunts: quirk}})
		g.initDevice()
		rx := g.setupRX(0, 8, 2048, true)
		g.peer.Send(g.frame(40, 1))
		st, l := rx.wb(0)
		if quirk {
			if st&intelnic.RxStatusDD == 0 || l != 60 {
				t.Fatalf("quirk: runt written back with status %#x length %d, want a 60-byte frame", st, l)
			}
			continue
		}
		if st&intelnic.RxStatusDD != 0 || g.rd(intelnic.RUC) != 1 {
			t.Fatalf("silicon: runt delivered (status %#x) or not counted in RUC", st)
		}
	}
}

// TestQuirkLateMSIX checks that with the QEMU quirk a message EITR held back is sent when
// the interval ends even though the driver masked the vector and cleared its cause
// meanwhile — a spurious vector the driver must tolerate — and that silicon sends none.
func TestQuirkLateMSIX(t *testing.T) {
	for _, quirk := range []bool{false, true} {
		g := newRig(t, Config{Quirks: Quirks{LateMSIX: quirk}})
		g.initDevice()
		vs := g.setupMSIX(false)
		g.setupRX(0, 16, 2048, true)
		g.wr(g.m.l.eitr(0), 0xFF8) // about 1 ms
		g.wr(g.m.l.eims, 1)
		sent := false
		for try := 0; try < 20 && !sent; try++ {
			g.peer.Send(g.frame(64, 0)) // fires at once (or is throttled by the last try)
			g.wr(g.m.l.eicr, 1)
			g.peer.Send(g.frame(64, 1)) // within the interval: held back
			sent = g.m.Stats().Throttled > 0
		}
		if !sent {
			t.Skip("could never send two frames within one EITR interval on this machine")
		}
		g.wr(g.m.l.eimc, 1) // the driver masks the vector and acknowledges the cause
		g.wr(g.m.l.eicr, 1)
		before := g.dev.Fired()[0]
		if quirk {
			testutil.Eventually(t, time.Second, func() bool { return g.m.Stats().LateInterrupts > 0 }, "the held-back message was never sent")
			continue
		}
		time.Sleep(5 * time.Millisecond) // several intervals: a message would have come
		if n := g.dev.Fired()[0] - before; n != 0 {
			t.Fatalf("silicon sent %d messages after the cause was gone", n)
		}
		testutil.Drain(t, vs[0])
	}
}
