package intel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

func TestInitRegisters(t *testing.T) {
	g := newRig(t, Config{})
	// Registers a driver set before the reset return to their reset values.
	g.wr(g.m.l.gpie, gpieMSIXMode)
	g.wr(g.rxq(0, qLEN), 1024)
	g.initDevice()
	tests := []struct {
		name      string
		off, mask uint32
		want      uint32
	}{
		{"CTRL reset bits self-clear", ctrl, ctrlRST | ctrlLNKRS, 0},
		{"EEC auto-read done", eec, eecAutoRead | eecPresent, eecAutoRead | eecPresent},
		{"RDRXCTL DMA init done", rdrxctl, rdrxctlDMAIDone, rdrxctlDMAIDone},
		{"LINKS up at 10G", links, linksUp | linksSpeed10G, linksUp | linksSpeed10G},
		{"STATUS GIO master enabled", status, statusGIOMaster, statusGIOMaster},
		{"GPIE reset", g.m.l.gpie, ^uint32(0), 0},
		{"RDLEN reset", g.rxq(0, qLEN), ^uint32(0), 0},
		{"RAL0 holds the MAC", g.m.l.ral(0), ^uint32(0), 0x01000002},
		{"RAH0 holds the MAC and AV", g.m.l.rah(0), ^uint32(0), rahAV | 0x0100},
		{"RAL0 at its 82598 alias", 0x5400, ^uint32(0), 0x01000002},
		{"TXDCTL enable reads back", g.txq(0, qDCTL), dctlEnable, 0},
		{"DMATXCTL TE", dmatxctl, 1, 1},
		{"MAXFRS reset", maxfrs, 0xFFFF0000, 1518 << 16},
	}
	for _, tt := range tests {
		if got := g.rd(tt.off) & tt.mask; got != tt.want {
			t.Errorf("%s: 0x%05x & 0x%x = 0x%x, want 0x%x", tt.name, tt.off, tt.mask, got, tt.want)
		}
	}
	// The RDRXCTL DMA-init bit is read-only; AUTOC restart self-clears.
	g.wr(rdrxctl, 0)
	if g.rd(rdrxctl)&rdrxctlDMAIDone == 0 {
		t.Error("RDRXCTL.DMAIDONE writable")
	}
	if g.rd(autoc)&autocANRestart != 0 {
		t.Error("AUTOC.AN_RESTART did not self-clear")
	}
	// EICR reads clear; EIMS/EIMC set and clear the mask.
	g.wr(g.m.l.eims, 0x00100003)
	if got := g.rd(g.m.l.eims); got != 0x00100003 {
		t.Errorf("EIMS = %x", got)
	}
	g.wr(g.m.l.eimc, 0x1)
	if got := g.rd(g.m.l.eims); got != 0x00100002 {
		t.Errorf("EIMS after EIMC = %x", got)
	}
	g.wr(g.m.l.eics, 0x5)
	if got := g.rd(g.m.l.eics); got != 0x5|eicrLSC { // LSC from the link coming up
		t.Errorf("EICS read = %x, want the causes", got)
	}
	if got := g.rd(g.m.l.eicr); got != 0x5|eicrLSC {
		t.Errorf("EICR = %x", got)
	}
	if got := g.rd(g.m.l.eicr); got != 0 {
		t.Errorf("EICR after read = %x", got)
	}
	g.wr(g.m.l.eics, 0x5)
	g.wr(g.m.l.eicr, 0x1)
	if got := g.rd(g.m.l.eicr); got != 0x4 {
		t.Errorf("EICR after W1C = %x", got)
	}
	// SRRCTL has its 82598 alias for queues 0-15.
	g.wr(0x2100+4*3, 0x02000004)
	if got := g.rd(g.m.l.srrctl(3)); got != 0x02000004 {
		t.Errorf("SRRCTL(3) via alias = %x", got)
	}
}

func TestLinkUpDelay(t *testing.T) {
	g := newRig(t, Config{Timing: Timing{Autoneg: 20 * time.Millisecond}})
	g.initDevice()
	g.waitSet(links, linksUp)
	if st := g.m.Stats(); st.LinkChanges == 0 {
		t.Fatal("no link change counted")
	}
}

func TestRXFramesByteExact(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	g.setBits(hlreg0, hlreg0Jumbo)
	g.wr(maxfrs, 9018<<16)
	const n = 32
	rx := g.setupRX(0, n, 2048, true)
	rnd := rand.New(rand.NewPCG(1, 2))
	next := 0
	var bytesIn uint64
	for k := 0; k < 10*n; k++ {
		size := 60 + rnd.IntN(2048-60+1)
		f := g.frame(size, byte(k))
		if err := g.peer.Send(f); err != nil {
			t.Fatal(err)
		}
		bytesIn += uint64(size + 4)
		st, l := rx.wb(next)
		if st != rxStatusDD|rxStatusEOP || l != size || !bytes.Equal(rx.buf(next)[:l], f) {
			t.Fatalf("frame %d (%d bytes) in descriptor %d: status %#x length %d", k, size, next, st, l)
		}
		// Driver: recycle the descriptor and give it back.
		rx.post(next)
		g.wr(g.rxq(0, qT), uint32(next))
		next = (next + 1) % n
	}
	if got := g.rd(gprc); got != 10*n {
		t.Errorf("GPRC %d", got)
	}
	gorc := uint64(g.rd(gorcl)) | uint64(g.rd(gorch))<<32
	if gorc != bytesIn {
		t.Errorf("GORC %d, want %d (with FCS)", gorc, bytesIn)
	}
	if got := g.rd(0x1030); got != 10*n {
		t.Errorf("QPRC(0) %d", got)
	}
	if st := g.m.Stats(); st.RxFrames != 10*n || st.Missed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRXFilterAndLengths(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	g.clearBits(fctrl, fctrlUPE|fctrlMPE|fctrlBAM)
	g.setupRX(0, 16, 2048, true)
	other := g.frame(64, 0)
	other[5] ^= 0xFF
	bcast := g.frame(64, 0)
	copy(bcast, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	mcast := g.frame(64, 0)
	copy(mcast, []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01})
	tests := []struct {
		name  string
		setup func()
		frame []byte
		take  bool
	}{
		{"own unicast", nil, g.frame(64, 0), true},
		{"other unicast", nil, other, false},
		{"broadcast without BAM", nil, bcast, false},
		{"broadcast with BAM", func() { g.setBits(fctrl, fctrlBAM) }, bcast, true},
		{"multicast without MPE", nil, mcast, false},
		{"multicast in MTA", func() {
			g.setBits(mcstctrl, 4)
			v := uint32(0x01) << 4 // MO=0: bits 47:36 of 01:00:5e:00:00:01
			g.wr(mta+4*(v>>5), 1<<(v&31))
		}, mcast, true},
		{"other unicast with UPE", func() { g.setBits(fctrl, fctrlUPE) }, other, true},
		{"runt", nil, g.frame(59, 0), false},
		{"oversize", nil, g.frame(1519, 0), false},
		{"jumbo with JUMBOEN", func() { g.setBits(hlreg0, hlreg0Jumbo); g.wr(maxfrs, 9018<<16) }, g.frame(1519, 0), true},
	}
	for _, tt := range tests {
		if tt.setup != nil {
			tt.setup()
		}
		before := g.m.Stats().RxFrames
		g.peer.Send(tt.frame)
		if took := g.m.Stats().RxFrames > before; took != tt.take {
			t.Errorf("%s: taken %v, want %v", tt.name, took, tt.take)
		}
	}
	if g.rd(ruc) != 1 || g.rd(roc) != 1 {
		t.Error("RUC/ROC not counted")
	}
}

func TestRXMultiDescriptorAndCRC(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	g.setBits(hlreg0, hlreg0Jumbo)
	g.wr(maxfrs, 9018<<16)
	rx := g.setupRX(0, 16, 1024, true)
	f := g.frame(2500, 3)
	g.peer.Send(f)
	var got []byte
	for i, want := range []struct{ st uint32 }{{rxStatusDD}, {rxStatusDD}, {rxStatusDD | rxStatusEOP}} {
		st, l := rx.wb(i)
		if st != want.st {
			t.Fatalf("descriptor %d status %#x, want %#x", i, st, want.st)
		}
		got = append(got, rx.buf(i)[:l]...)
	}
	if !bytes.Equal(got, f) {
		t.Fatal("frame spread over descriptors differs")
	}
	// Without CRC stripping the FCS stays in the buffer.
	g.clearBits(hlreg0, hlreg0RxCRCStrip)
	f = g.frame(100, 4)
	g.peer.Send(f)
	_, l := rx.wb(3)
	if l != 104 || !bytes.Equal(rx.buf(3)[:100], f) {
		t.Fatalf("without CRC strip: length %d", l)
	}
}

func TestRXMissedAndPacketBuffer(t *testing.T) {
	// Descriptor starvation with DROP_EN is counted per queue (82599 QPRDC, 82576
	// RQDPC), not in MPC, which counts packet-buffer overflows.
	for _, c := range []struct {
		flavor Flavor
		drops  func(q int) uint32
	}{
		{X82599, func(q int) uint32 { return qprdc + qStride*uint32(q) }},
		{X82576, func(q int) uint32 { return 0xC030 + qStride*uint32(q) }},
		{X82576, func(q int) uint32 { return 0x2830 + 0x100*uint32(q) }}, // the low-queue alias
	} {
		t.Run("drop-enable-"+c.flavor.String(), func(t *testing.T) {
			g := newRig(t, Config{Flavor: c.flavor})
			g.initDevice()
			g.setupRX(2, 8, 2048, true) // 7 usable descriptors
			g.steerTo(2)
			for i := 0; i < 10; i++ {
				g.peer.Send(frameForMAC(g, uint16(i)))
			}
			if d := g.rd(c.drops(2)); d != 3 {
				t.Fatalf("queue 2 drop counter %d, want 3", d)
			}
			if g.rd(c.drops(2)) != 0 {
				t.Fatal("queue drop counter not read-to-clear")
			}
			if mpc := g.rd(g.m.l.mpc); mpc != 0 {
				t.Fatalf("MPC %d for descriptor starvation, want 0", mpc)
			}
		})
	}
	t.Run("packet-buffer", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		rx := g.setupRX(0, 8, 2048, false)
		for i := 0; i < 10; i++ {
			g.peer.Send(g.frame(64, byte(i)))
		}
		if st := g.m.Stats(); st.Missed != 0 || st.Buffered != 3 || st.RxFrames != 7 {
			t.Fatalf("stats %+v", st)
		}
		// The driver recycles descriptors 0..1 and moves RDT to 2: descriptors 7, 0
		// and 1 take the waiting frames.
		for i := 0; i < 2; i++ {
			rx.post(i)
		}
		g.wr(g.rxq(0, qT), 2)
		if st := g.m.Stats(); st.RxFrames != 10 {
			t.Fatalf("after RDT: %d frames placed, want 10", st.RxFrames)
		}
		st, _ := rx.wb(1)
		if st&rxStatusDD == 0 || rx.buf(1)[14] != 9+14 {
			t.Fatal("buffered frame 9 not in descriptor 1")
		}
		// A full packet buffer misses.
		g.wr(rxpbsize0, 1<<10) // 1 KB
		for i := 0; i < 20; i++ {
			g.peer.Send(g.frame(100, 0))
		}
		if g.m.Stats().Missed == 0 {
			t.Fatal("overflowing packet buffer missed nothing")
		}
	})
}

func TestTXPath(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	tx := g.setupTX(0, 16, 2048)
	rnd := rand.New(rand.NewPCG(3, 4))
	var want [][]byte
	tail := 0
	for k := 0; k < 40; k++ {
		f := g.frame(60+rnd.IntN(1454), byte(k))
		want = append(want, f)
		tx.fillTX(tail, f, txCmd)
		tail = (tail + 1) % 16
		g.wr(g.txq(0, qT), uint32(tail))
		if h := g.rd(g.txq(0, qH)); h != uint32(tail) {
			t.Fatalf("TDH %d, want %d", h, tail)
		}
	}
	got := g.received()
	if len(got) != len(want) {
		t.Fatalf("%d frames on the wire, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if g.rd(gptc) != 40 {
		t.Error("GPTC")
	}
	if sim.LoadUint32(tx.desc.Bytes[12:])&txStatusDD == 0 {
		t.Error("DD not written back")
	}

	// A frame over two descriptors, RS only on the last; a short frame padded; a frame
	// without IFCS refused; a context descriptor skipped.
	f := g.frame(300, 9)
	tx.fillTX(tail, f[:100], txdDEXT)
	tx.fillTX((tail+1)%16, f[100:], txCmd)
	binary.LittleEndian.PutUint64(tx.desc.Bytes[16*((tail+1)%16):], tx.bufs.IOVA+uint64(((tail+1)%16)*2048))
	ctx := tx.desc.Bytes[16*((tail+2)%16):]
	binary.LittleEndian.PutUint64(ctx, 0)
	binary.LittleEndian.PutUint32(ctx[8:], txdDEXT|txdTypeCtx<<20)
	binary.LittleEndian.PutUint32(ctx[12:], 0)
	tx.fillTX((tail+3)%16, f[:20], txCmd)
	tx.fillTX((tail+4)%16, f[:64], txdDEXT|txdRS|txdEOP) // no IFCS
	sim.StoreUint32(tx.desc.Bytes[16*tail+12:], 0)
	tail = (tail + 5) % 16
	g.wr(g.txq(0, qT), uint32(tail))
	got = g.received()
	if len(got) != 2 || !bytes.Equal(got[0], f) || len(got[1]) != 60 || !bytes.Equal(got[1][:20], f[:20]) {
		t.Fatalf("got %d frames", len(got))
	}
	if st := g.m.Stats(); st.TxNoFCS != 1 {
		t.Errorf("TxNoFCS %d", st.TxNoFCS)
	}
}

func TestTXHeadWriteBackAndGating(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	tx := g.setupTX(0, 8, 2048) // TE on first: the 82599 enables no TX queue without it
	g.wr(dmatxctl, 0)
	hw, _ := g.dev.DMA().Alloc(64)
	g.wr(g.txq(0, qWBAL), uint32(hw.IOVA)|tdwbalEnable)
	g.wr(g.txq(0, qWBAH), uint32(hw.IOVA>>32))
	tx.fillTX(0, g.frame(64, 1), txCmd)
	g.wr(g.txq(0, qT), 1)
	if len(g.received()) != 0 {
		t.Fatal("sent with DMATXCTL.TE off")
	}
	g.wr(dmatxctl, 1) // TE on: pending descriptors go
	if len(g.received()) != 1 || sim.LoadUint32(hw.Bytes) != 1 {
		t.Fatal("TE on did not send, or head not written back")
	}
	if sim.LoadUint32(tx.desc.Bytes[12:])&txStatusDD != 0 {
		t.Fatal("DD written back although head write-back replaces it")
	}
}

// TestDDWrittenLast runs a reader that polls DD concurrently with the model writing
// back frames of changing lengths: whenever it sees DD it must see that frame's length.
// Run with -race: the reader's atomic DD load orders its length read after the model's.
func TestDDWrittenLast(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	const n = 64
	rx := g.setupRX(0, n, 2048, true)
	frames := 4000
	if testing.Short() {
		frames = 1000
	}
	sizes := make([]int, frames)
	for i := range sizes {
		sizes[i] = 60 + (i*7919)%1400
	}
	done := make(chan error, 1)
	go func() {
		next := 0
		for k := 0; k < frames; k++ {
			for {
				st, l := rx.wb(next)
				if st&rxStatusDD != 0 {
					if l != sizes[k] {
						done <- errorf("frame %d: DD with length %d, want %d", k, l, sizes[k])
						return
					}
					break
				}
			}
			rx.post(next)
			g.wr(g.rxq(0, qT), uint32(next))
			next = (next + 1) % n
		}
		done <- nil
	}()
	for k := 0; k < frames; {
		if g.m.Stats().RxFrames+g.m.Stats().QueueDrops > uint64(k) {
			k++
			continue
		}
		before := g.m.Stats().QueueDrops
		g.peer.Send(g.frame(sizes[k], byte(k)))
		if g.m.Stats().QueueDrops > before { // ring full: retry the same frame
			g.m.dev.Lock()
			g.m.st.QueueDrops--
			g.m.dev.Unlock()
			continue
		}
		k++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func errorf(format string, args ...any) error {
	return errString(fmt.Sprintf(format, args...))
}

// setupMSIX puts the model in MSI-X mode with RX queue 0 on vector 0, LSC on vector 1.
func (g *rig) setupMSIX(eiac bool) []*irq.Vector {
	g.t.Helper()
	vs, err := g.dev.IRQs(irq.MSIX, 2)
	if err != nil {
		g.t.Fatal(err)
	}
	g.wr(g.m.l.gpie, gpieMSIXMode|1<<31|gpieEIAME)
	g.wr(g.m.l.ivar0, 0x80)       // RX queue 0 → vector 0
	g.wr(g.m.l.ivarMisc, 0x81<<8) // other causes → vector 1
	if eiac {
		g.wr(g.m.l.eiac, 1)
	}
	return vs
}

func drain(t *testing.T, v *irq.Vector) uint64 {
	t.Helper()
	n, err := v.Drain()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMSIXMaskUnmaskAutoClear(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	vs := g.setupMSIX(true)
	g.setupRX(0, 16, 2048, true)
	g.peer.Send(g.frame(64, 0))
	if drain(t, vs[0]) != 0 {
		t.Fatal("masked queue fired")
	}
	if g.rd(g.m.l.eics)&1 == 0 {
		t.Fatal("cause not pending while masked")
	}
	g.wr(g.m.l.eims, 1) // unmask: the pending cause fires at once
	if drain(t, vs[0]) != 1 {
		t.Fatal("unmask did not fire the pending cause")
	}
	if g.rd(g.m.l.eics)&1 != 0 {
		t.Fatal("EIAC did not auto-clear the cause")
	}
	g.peer.Send(g.frame(64, 1))
	if drain(t, vs[0]) != 1 {
		t.Fatal("new frame did not fire")
	}
	// EIAM auto-mask (GPIE.EIAME): the vector masks itself when it fires.
	g.wr(g.m.l.eiam, 1)
	g.peer.Send(g.frame(64, 2))
	g.peer.Send(g.frame(64, 3))
	if drain(t, vs[0]) != 1 || g.rd(g.m.l.eims)&1 != 0 {
		t.Fatal("EIAM did not auto-mask")
	}
	// Without EIAC the cause stays until the driver clears it: no new message.
	g.wr(g.m.l.eiam, 0)
	g.wr(g.m.l.eiac, 0)
	g.wr(g.m.l.eims, 1)
	drain(t, vs[0])
	g.wr(g.m.l.eicr, 1) // the driver acknowledges
	g.peer.Send(g.frame(64, 4))
	g.peer.Send(g.frame(64, 5))
	if n := drain(t, vs[0]); n != 1 {
		t.Fatalf("cause held: %d messages, want 1", n)
	}
	if st := g.m.Stats(); st.Interrupts == 0 || st.LostInterrupts != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEITRSpacing(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	vs := g.setupMSIX(true)
	g.setupRX(0, 64, 2048, true)
	g.wr(g.m.l.eitr(0), 0xFF8) // 511 × 2.048 µs
	interval := time.Duration(g.m.l.eitrNanos(0xFF8))
	g.wr(g.m.l.eims, 1)
	for try := 0; ; try++ {
		before := time.Now()
		g.peer.Send(g.frame(64, 0))
		g.peer.Send(g.frame(64, 1))
		if g.m.Stats().Throttled == 0 {
			if try > 20 {
				t.Skip("could never send two frames within one EITR interval on this machine")
			}
			time.Sleep(2 * interval)
			drain(t, vs[0])
			continue
		}
		// Both messages must arrive, the second no earlier than one interval after the
		// first frame was sent (a lower bound, safe on a noisy machine).
		var got uint64
		for deadline := time.Now().Add(time.Second); got < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
			got += drain(t, vs[0])
		}
		if got != 2 {
			t.Fatalf("%d messages for two frames, want 2", got)
		}
		if gap := time.Since(before); gap < interval {
			t.Fatalf("second message %v after the first frame, EITR interval %v", gap, interval)
		}
		return
	}
}

func TestLSCInterrupt(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	vs := g.setupMSIX(false)
	g.wr(g.m.l.eims, eicrLSC)
	g.m.FlapLink(0)
	if n := drain(t, vs[1]); n != 1 {
		t.Fatalf("LSC fired %d times, want 1 (cause held until cleared)", n)
	}
	if g.rd(g.m.l.eicr)&eicrLSC == 0 {
		t.Fatal("LSC not in EICR")
	}
	g.m.SetLink(false)
	if drain(t, vs[1]) != 1 || g.rd(links)&linksUp != 0 {
		t.Fatal("link down not signalled")
	}
	g.m.SetLink(true)
	if g.rd(links)&linksUp == 0 {
		t.Fatal("link not back")
	}
}

func TestLegacyINTx(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	v := g.intx(t)
	g.wr(g.m.l.ivar0, 0x80) // RX queue 0 → EICR bit 0
	g.setupRX(0, 16, 2048, true)
	g.peer.Send(g.frame(64, 0))
	if drain(t, v) != 0 {
		t.Fatal("masked INTx fired")
	}
	g.wr(g.m.l.eims, 1)
	if drain(t, v) != 1 {
		t.Fatal("unmask did not assert INTx")
	}
	g.peer.Send(g.frame(64, 1))
	if drain(t, v) != 0 {
		t.Fatal("fired again before rearm")
	}
	v.Rearm() // still asserted (EICR not read): fires again
	if drain(t, v) != 1 {
		t.Fatal("rearm of an asserted line did not fire")
	}
	if g.rd(g.m.l.eicr)&1 == 0 {
		t.Fatal("EICR lost the cause")
	}
	v.Rearm() // acknowledged: quiet
	if drain(t, v) != 0 {
		t.Fatal("fired after EICR read")
	}
	g.peer.Send(g.frame(64, 2))
	if drain(t, v) != 1 {
		t.Fatal("next frame did not fire")
	}
}

func TestBusMasterOff(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	rx := g.setupRX(0, 16, 2048, true)
	tx := g.setupTX(0, 16, 2048)
	pci.SetBusMaster(g.dev.Config(), false)
	g.peer.Send(g.frame(64, 0))
	tx.fillTX(0, g.frame(64, 0), txCmd)
	g.wr(g.txq(0, qT), 1)
	if st, _ := rx.wb(0); st != 0 || len(g.received()) != 0 {
		t.Fatal("DMA without bus mastering")
	}
	if st := g.m.Stats(); st.NoBusMaster != 2 {
		t.Fatalf("NoBusMaster %d", st.NoBusMaster)
	}
	if g.rd(status)&statusGIOMaster != 0 {
		t.Fatal("STATUS.GIO master enabled without bus mastering")
	}
}

func TestFaultInjection(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		g.setupRX(0, 16, 2048, true)
		g.m.DropNext(2)
		for i := 0; i < 3; i++ {
			g.peer.Send(g.frame(64, 0))
		}
		if st := g.m.Stats(); st.Dropped != 2 || st.RxFrames != 1 {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("stall", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		rx := g.setupRX(0, 16, 2048, true)
		g.m.StallRX(true)
		g.peer.Send(g.frame(64, 0))
		if st, _ := rx.wb(0); st != 0 {
			t.Fatal("stalled RX wrote back")
		}
		g.m.StallRX(false)
		if st, _ := rx.wb(0); st&rxStatusDD == 0 {
			t.Fatal("resumed RX did not place the frame")
		}
	})
	t.Run("oversize", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		rx := g.setupRX(0, 16, 2048, true)
		g.m.OversizeNext(1)
		g.peer.Send(g.frame(64, 0))
		if _, l := rx.wb(0); l <= 2048 {
			t.Fatalf("length %d not beyond the buffer", l)
		}
	})
	t.Run("unposted-dd", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		rx := g.setupRX(0, 16, 2048, true)
		if err := g.m.WriteUnpostedDD(0); err != nil {
			t.Fatal(err)
		}
		if st, _ := rx.wb(15); st&rxStatusDD == 0 || g.rd(g.rxq(0, qH)) != 0 {
			t.Fatal("no DD on the unposted descriptor, or RDH moved")
		}
	})
	t.Run("bad-dma", func(t *testing.T) {
		g := newRig(t, Config{})
		g.allowFaults = true
		g.initDevice()
		g.setupRX(0, 16, 2048, true)
		g.m.BadDMANext(1)
		g.peer.Send(g.frame(64, 0))
		g.peer.Send(g.frame(64, 1))
		if st := g.m.Stats(); st.DMAFaults != 1 || st.RxFrames != 1 {
			t.Fatalf("%+v", st)
		}
		faults, _ := g.dev.Faults()
		if g.dev.Err() == nil || faults[0].Kind != sim.DMAFault || faults[0].Addr != badDMAAddr {
			t.Fatalf("faults %v", faults)
		}
	})
	t.Run("spurious-and-storm", func(t *testing.T) {
		g := newRig(t, Config{})
		g.initDevice()
		vs := g.setupMSIX(true)
		g.m.SpuriousInterrupt(0)
		g.m.InterruptStorm(0, 100)
		if n := drain(t, vs[0]); n != 101 {
			t.Fatalf("%d interrupts, want 101", n)
		}
		if g.rd(g.m.l.eicr)&0xFFFF != 0 {
			t.Fatal("spurious interrupt set a cause")
		}
	})
	t.Run("wrong-descriptor-address", func(t *testing.T) {
		g := newRig(t, Config{})
		g.allowFaults = true
		g.initDevice()
		tx := g.setupTX(0, 16, 2048)
		tx.fillTX(0, g.frame(64, 0), txCmd)
		binary.LittleEndian.PutUint64(tx.desc.Bytes, 0x1000) // a physical-looking address
		g.wr(g.txq(0, qT), 1)
		if len(g.received()) != 0 || g.dev.Err() == nil {
			t.Fatal("IOMMU did not catch a wrong bus address")
		}
	})
}

func TestRSS(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	const nq = 4
	var rings [nq]*ring
	for q := 0; q < nq; q++ {
		rings[q] = g.setupRX(q, 256, 2048, true)
	}
	for i := 0; i < 10; i++ {
		g.wr(g.m.l.rssrk+4*uint32(i), binary.LittleEndian.Uint32(msKey[4*i:]))
	}
	for i := 0; i < 32; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= uint32((4*i+j)%nq) << (8 * j)
		}
		g.wr(g.m.l.reta+4*uint32(i), v)
	}
	g.wr(rxcsum, rxcsumPCSD)
	g.wr(g.m.l.mrqc, 1|mrqcFieldIPv4|mrqcFieldIPv4TCP|mrqcFieldIPv4UDP|mrqcFieldIPv6|mrqcFieldIPv6TCP|mrqcFieldIPv6UDP)
	flow := func(i int) []byte {
		src := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		f := frameFor(src, netip.MustParseAddr("10.1.0.1"), 17, uint16(1000+i), 53)
		copy(f, g.m.cfg.MAC)
		return append(f, make([]byte, 64)...)
	}
	counts := func() (c [nq]uint32) {
		for q := range c {
			c[q] = g.rd(g.rxq(q, qH))
		}
		return
	}
	// One flow: all its frames in one queue.
	for k := 0; k < 10; k++ {
		g.peer.Send(flow(7))
	}
	c := counts()
	busy := 0
	for _, n := range c {
		if n != 0 {
			busy++
			if n != 10 {
				t.Fatalf("flow split: %v", c)
			}
		}
	}
	if busy != 1 {
		t.Fatalf("flow spread over %d queues: %v", busy, c)
	}
	// Many flows: every queue gets some.
	for i := 0; i < 200; i++ {
		g.peer.Send(flow(100 + i))
	}
	c = counts()
	for q, n := range c {
		if n == 0 {
			t.Fatalf("queue %d got no flows: %v", q, c)
		}
	}
	// The write-back carries the hash.
	f := flow(7)
	h, _ := rssHash(f, g.rd(g.m.l.mrqc), msKey, make([]byte, 64))
	q := g.m.l.queues
	for qq := 0; qq < nq; qq++ {
		if c[qq] >= 10 && binary.LittleEndian.Uint32(rings[qq].desc.Bytes[4:]) == h {
			q = qq
		}
	}
	if q == g.m.l.queues {
		t.Fatal("no queue's first write-back carries the flow's RSS hash")
	}
}

func TestSharedIOMMUForwarding(t *testing.T) {
	// Two ports in one IOMMU: a buffer received on one is sent by the other, no copy.
	pair, err := NewPair(Config{Addr: pci.MustParseAddr("0000:01:00.0"), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pair.Close()
	ma, mb, a2, b2 := pair.Models[0], pair.Models[1], pair.Far[0], pair.Far[1]
	if ma.Device().DMA() != mb.Device().DMA() {
		t.Fatal("DMA() differs")
	}
	var mu sync.Mutex
	var out [][]byte
	b2.SetHandler(func(f []byte, _ int64) { mu.Lock(); out = append(out, append([]byte(nil), f...)); mu.Unlock() })
	ga := &rig{t: t, m: ma, dev: ma.Device(), peer: a2}
	gb := &rig{t: t, m: mb, dev: mb.Device(), peer: b2}
	for _, g := range []*rig{ga, gb} {
		g.r, _ = g.dev.Region(0)
		pci.SetBusMaster(g.dev.Config(), true)
		g.initDevice()
	}
	rx := ga.setupRX(0, 16, 2048, true)
	tx := gb.setupTX(0, 16, 2048)
	f := ga.frame(200, 5)
	a2.Send(f)
	_, l := rx.wb(0)
	d := tx.desc.Bytes
	binary.LittleEndian.PutUint64(d, rx.bufs.IOVA)
	binary.LittleEndian.PutUint32(d[8:], uint32(l)|txdTypeData<<20|txCmd)
	gb.wr(gb.txq(0, qT), 1)
	if len(out) != 1 || !bytes.Equal(out[0], f) {
		t.Fatal("zero-copy forward failed")
	}
	if ma.Device().Err() != nil || mb.Device().Err() != nil {
		t.Fatal(ma.Device().Err(), mb.Device().Err())
	}
}

func TestCloseStopsModel(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	rx := g.setupRX(0, 16, 2048, true)
	g.m.Close()
	g.peer.Send(g.frame(64, 0)) // the wire handler is gone: nothing happens
	if st, _ := rx.wb(0); st != 0 {
		t.Fatal("model wrote after Close")
	}
}

func TestProtocolFaults(t *testing.T) {
	tests := []struct {
		name string
		do   func(g *rig)
	}{
		{"rx queue enabled without a ring", func(g *rig) {
			g.setBits(g.rxq(0, qDCTL), dctlEnable)
			g.waitSet(g.rxq(0, qDCTL), dctlEnable)
			g.setBits(rxctrl, 1)
			g.peer.Send(g.frame(64, 0))
		}},
		{"rx buffer size zero", func(g *rig) {
			g.setupRX(0, 8, 2048, true)
			g.wr(g.m.l.srrctl(0), srrctlDescAdv<<25)
			g.peer.Send(g.frame(64, 0))
		}},
		{"tx tail beyond the ring", func(g *rig) {
			g.setupTX(0, 8, 2048)
			g.wr(g.txq(0, qT), 9)
		}},
		{"tx unknown descriptor type", func(g *rig) {
			tx := g.setupTX(0, 8, 2048)
			tx.fillTX(0, g.frame(64, 0), txCmd)
			d := tx.desc.Bytes[8:]
			binary.LittleEndian.PutUint32(d, binary.LittleEndian.Uint32(d)&^(0xF<<20)|7<<20)
			g.wr(g.txq(0, qT), 1)
		}},
		{"unknown register", func(g *rig) { g.rd(0x1FFFC) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, Config{})
			g.allowFaults = true
			g.initDevice()
			tt.do(g)
			if g.dev.Err() == nil {
				t.Fatal("strict model did not report the violation")
			}
		})
	}
}

func TestLegacyTXDescriptor(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	tx := g.setupTX(0, 8, 2048)
	f := g.frame(100, 7)
	copy(tx.buf(0), f)
	d := tx.desc.Bytes
	binary.LittleEndian.PutUint64(d, tx.bufs.IOVA)
	binary.LittleEndian.PutUint32(d[8:], uint32(len(f))|uint32(legacyEOP|legacyIFCS|legacyRS)<<24)
	binary.LittleEndian.PutUint32(d[12:], 0)
	g.wr(g.txq(0, qT), 1)
	if got := g.received(); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatal("legacy descriptor not sent")
	}
	if d[12]&txStatusDD == 0 {
		t.Fatal("no DD in the legacy status byte")
	}
}

func TestFunctionLevelReset(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	g.wr(g.m.l.gpie, gpieMSIXMode)
	if err := g.dev.Reset(); err != nil {
		t.Fatal(err)
	}
	if g.rd(g.m.l.gpie) != 0 || g.rd(g.m.l.ral(0)) != 0x01000002 {
		t.Fatal("FLR did not restore reset values and the MAC")
	}
	cmd, _ := pci.ReadConfig16(g.dev.Config(), pci.CfgCommand)
	if cmd&pci.CmdBusMaster == 0 {
		t.Fatal("FLR dropped the (VFIO-restored) command register")
	}
}

func TestExtendedVectorsAndMisc(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	vs, err := g.dev.IRQs(irq.MSIX, 24)
	if err != nil {
		t.Fatal(err)
	}
	g.wr(g.m.l.gpie, gpieMSIXMode)
	// RX queue 3 → vector 20, beyond EICR's 16 vector bits: EIMS_EX/EIMC_EX/EICS_EX.
	g.wr(g.m.l.ivar0+4*1, 0x94<<16)
	g.setupRX(3, 8, 2048, true)
	for i := 0; i < 32; i++ {
		g.wr(g.m.l.reta+4*uint32(i), 0x03030303)
	}
	g.wr(rxcsum, rxcsumPCSD)
	g.wr(g.m.l.mrqc, 1|mrqcFieldIPv4)
	g.peer.Send(frameForMAC(g, 9))
	if drain(t, vs[20]) != 0 {
		t.Fatal("masked extended vector fired")
	}
	g.wr(eimsEx0, 1<<20)
	if g.rd(eimsEx0) != 1<<20 || drain(t, vs[20]) != 1 {
		t.Fatal("EIMS_EX unmask did not fire vector 20")
	}
	g.wr(eimcEx0, 1<<20)
	if g.rd(eimsEx0) != 0 {
		t.Fatal("EIMC_EX did not mask")
	}
	g.wr(eimsEx0, 1<<21)
	g.wr(eicsEx0, 1<<21)
	if drain(t, vs[21]) != 1 {
		t.Fatal("EICS_EX did not fire vector 21")
	}

	// EEPROM read through EERD, the software semaphore, accessors.
	g.wr(eerd, 3<<2|eerdStart)
	if g.rd(eerd)&eerdDone == 0 {
		t.Fatal("EERD not done")
	}
	if g.rd(swsm)&1 != 0 || g.rd(swsm)&1 == 0 {
		t.Fatal("SWSM semaphore: first read must get it, second must see it taken")
	}
	g.wr(swsm, 0)
	if g.rd(swsm)&1 != 0 {
		t.Fatal("SWSM not released")
	}
	if !g.m.Link() || g.m.Flavor() != X82599 || g.m.MAC().String() != "02:00:00:01:00:01" {
		t.Fatal("accessors")
	}
}

func TestIGBPHYAndICRWrite(t *testing.T) {
	g := newRig(t, Config{Flavor: X82576})
	g.initDevice()
	g.mdicWrite(phyANAR, 0x0DE1)
	if g.mdicRead(phyANAR) != 0x0DE1 || g.mdicRead(phyGSR) == 0 || g.mdicRead(phyANLPAR) == 0 {
		t.Fatal("PHY registers")
	}
	g.wr(mdic, 1<<16|2<<21|mdicOpR) // PHY address 2 does not exist
	if g.rd(mdic)&(mdicReady|mdicError) != mdicReady|mdicError {
		t.Fatal("MDIC to a missing PHY did not report an error")
	}
	g.m.SetLink(false)
	if g.mdicRead(phyBMSR)&bmsrLink != 0 || g.rd(status)&statusLU82576 != 0 {
		t.Fatal("link down not visible in BMSR and STATUS")
	}
	g.wr(ics, icrLSC|icrRXDW)
	g.wr(icr, icrLSC) // write 1 to clear
	if g.m.ic.misc != icrRXDW {
		t.Fatalf("ICR after W1C = %#x", g.m.ic.misc)
	}
}
