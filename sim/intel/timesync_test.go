package intel

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/wire"
)

// systim reads SYSTIM, low half first.
func (g *rig) systim(r *intelnic.TimesyncRegs) uint64 {
	l := g.rd(r.SYSTIML)
	return uint64(g.rd(r.SYSTIMH))<<32 | uint64(l)
}

// TestTimesyncRxLatchRule: the RX latch is freed by the RXSTMPH read on the silicon and
// by the RXSATRH read with Quirks.RxLatchFreedBySATRH (QEMU's igb_get_rxsatrh), and by
// nothing else.
func TestTimesyncRxLatchRule(t *testing.T) {
	for _, tt := range []struct {
		quirk     bool
		frees     string
		keepsFull []string
	}{
		{false, "RXSTMPH", []string{"RXSATRL", "RXSATRH", "RXSTMPL"}},
		{true, "RXSATRH", []string{"RXSATRL", "RXSTMPL", "RXSTMPH"}},
	} {
		g := newRig(t, Config{Flavor: X82576, Quirks: Quirks{RxLatchFreedBySATRH: tt.quirk}})
		r := &i82576.Timesync
		off := map[string]uint32{"RXSATRL": r.RXSATRL, "RXSATRH": r.RXSATRH, "RXSTMPL": r.RXSTMPL, "RXSTMPH": r.RXSTMPH}
		g.m.dev.Lock()
		g.m.set(r.TSYNCRXCTL, intelnic.TsyncEnable|intelnic.TsyncValid)
		g.m.dev.Unlock()
		for _, name := range tt.keepsFull {
			g.rd(off[name])
			if g.rd(r.TSYNCRXCTL)&intelnic.TsyncValid == 0 {
				t.Errorf("quirk %v: reading %s freed the latch", tt.quirk, name)
			}
		}
		g.rd(off[tt.frees])
		if g.rd(r.TSYNCRXCTL)&intelnic.TsyncValid != 0 {
			t.Errorf("quirk %v: reading %s left the latch full", tt.quirk, tt.frees)
		}
	}
}

// TestTimesyncClockRegs: TIMADJ and TIMINCA writes on the silicon (sign and magnitude;
// a continuous clock) and as QEMU's (two's complement; a TIMINCA write adds
// (new − old)·t/16, so the first one jumps SYSTIM to about twice the scaled time).
func TestTimesyncClockRegs(t *testing.T) {
	r := &i82576.Timesync
	adj := func(g *rig, v uint64) {
		g.wr(r.TIMADJL, uint32(v))
		g.wr(r.TIMADJH, uint32(v>>32))
	}
	const twosMinus1000 = 1<<64 - 1000
	for _, tt := range []struct {
		quirk        bool
		minus, other uint64 // TIMADJ for −1000 by the rule, and by the other rule
	}{
		{false, 1<<63 | 1000, twosMinus1000},
		{true, twosMinus1000, 1<<63 | 1000},
	} {
		g := newRig(t, Config{Flavor: X82576, Quirks: Quirks{QEMUClockRegs: tt.quirk}})
		// TIMINCA 0: the clock stands still, SYSTIM is the TIMADJ sum.
		adj(g, 5000)
		adj(g, tt.minus)
		if s := g.systim(r); s != 4000 {
			t.Errorf("quirk %v: SYSTIM %d after +5000 and −1000, want 4000", tt.quirk, s)
		}
		adj(g, tt.other)
		if s := g.systim(r); s == 3000 {
			t.Errorf("quirk %v: the other rule's −1000 subtracted 1000 too", tt.quirk)
		}
	}
	for _, quirk := range []bool{false, true} {
		g := newRig(t, Config{Flavor: X82576, Quirks: Quirks{QEMUClockRegs: quirk}})
		w0 := wire.Now()
		g.wr(r.TIMINCA, i82576.Timinca)
		s := g.systim(r) >> i82576.TimincaShift // ns
		w1 := wire.Now()
		lo, hi := uint64(0), uint64(w1-w0)+1000 // silicon: continuous from 0
		if quirk {
			lo, hi = 2*uint64(w0)-1000, 2*uint64(w1)+1000 // QEMU: twice the wire time
		}
		if s < lo || s > hi {
			t.Errorf("quirk %v: SYSTIM %d ns after the first TIMINCA write, want within [%d, %d]", quirk, s, lo, hi)
		}
		g.wr(r.TIMINCA, i82576.Timinca) // the same again: no jump on either
		s2 := g.systim(r) >> i82576.TimincaShift
		w2 := wire.Now()
		if d := s2 - s; d > uint64(w2-w0)+1000 {
			t.Errorf("quirk %v: rewriting TIMINCA moved SYSTIM by %d ns in %d ns", quirk, d, w2-w0)
		}
	}
}

// TestTimesyncLinkSpeed: the 82599's SYSTIM counts MAC clock cycles, so that with
// 10 Gb/s's TIMINCA it runs ten times slow once the link comes up at 1 Gb/s, and on time
// with 1 Gb/s's; the change of rate keeps the clock continuous.
func TestTimesyncLinkSpeed(t *testing.T) {
	r := &i82599.Timesync
	g := newRig(t, Config{Flavor: X82599})
	g.initDevice()
	inc10, shift10 := i82599.TimincaFor(10000)
	g.wr(r.TIMINCA, inc10)
	rate := func(shift uint) (dev, w0, w1 int64) {
		a0 := wire.Now()
		s0 := g.systim(r)
		a1 := wire.Now()
		time.Sleep(5 * time.Millisecond)
		b0 := wire.Now()
		s1 := g.systim(r)
		b1 := wire.Now()
		return int64((s1 - s0) >> shift), b0 - a1, b1 - a0
	}
	if d, lo, hi := rate(shift10); d < lo-1000 || d > hi+1000 {
		t.Fatalf("10 Gb/s: %d ns counted in [%d, %d] ns", d, lo, hi)
	}
	before := g.systim(r) >> shift10
	g.m.SetLinkSpeed(1000)
	g.waitSet(i82599.LINKS, i82599.LinksUp)
	if g.rd(i82599.LINKS)&i82599.LinksSpeed1G != i82599.LinksSpeed1G {
		t.Fatalf("LINKS %#x: not at 1 Gb/s", g.rd(i82599.LINKS))
	}
	if after := g.systim(r) >> shift10; after < before || after-before > uint64(time.Second) {
		t.Errorf("SYSTIM jumped from %d to %d ns at the speed change", before, after)
	}
	if d, lo, hi := rate(shift10); d*10 < lo-10_000 || d*10 > hi+10_000 {
		t.Errorf("1 Gb/s with 10 Gb/s's TIMINCA: %d ns counted in [%d, %d] ns, want a tenth", d, lo, hi)
	}
	inc1, shift1 := i82599.TimincaFor(1000)
	g.wr(r.TIMINCA, inc1)
	if d, lo, hi := rate(shift1); d < lo-1000 || d > hi+1000 {
		t.Errorf("1 Gb/s: %d ns counted in [%d, %d] ns", d, lo, hi)
	}
}
