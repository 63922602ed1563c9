package intel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
)

func TestRXFramesByteExact(t *testing.T) {
	g := newReadyRig(t)
	g.setBits(i82599.HLREG0, i82599.Hlreg0JumboEn)
	g.wr(i82599.MAXFRS, 9018<<16)
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
		if st != intelnic.RxStatusDD|intelnic.RxStatusEOP || l != size || !bytes.Equal(rx.buf(next)[:l], f) {
			t.Fatalf("frame %d (%d bytes) in descriptor %d: status %#x length %d", k, size, next, st, l)
		}
		// Driver: recycle the descriptor and give it back.
		rx.post(next)
		g.wr(g.rxq(0, intelnic.QT), uint32(next))
		next = (next + 1) % n
	}
	if got := g.rd(intelnic.GPRC); got != 10*n {
		t.Errorf("GPRC %d", got)
	}
	gorc := uint64(g.rd(intelnic.GORCL)) | uint64(g.rd(intelnic.GORCH))<<32
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
	g := newReadyRig(t)
	g.clearBits(i82599.FCTRL, i82599.FctrlUPE|i82599.FctrlMPE|i82599.FctrlBAM)
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
		{"broadcast with BAM", func() { g.setBits(i82599.FCTRL, i82599.FctrlBAM) }, bcast, true},
		{"multicast without MPE", nil, mcast, false},
		{"multicast in MTA", func() {
			g.setBits(i82599.MCSTCTRL, 4)
			v := uint32(0x01) << 4 // MO=0: bits 47:36 of 01:00:5e:00:00:01
			g.wr(intelnic.MTA+4*(v>>5), 1<<(v&31))
		}, mcast, true},
		{"other unicast with UPE", func() { g.setBits(i82599.FCTRL, i82599.FctrlUPE) }, other, true},
		{"runt", nil, g.frame(59, 0), false},
		{"oversize", nil, g.frame(1519, 0), false},
		{"jumbo with JUMBOEN", func() { g.setBits(i82599.HLREG0, i82599.Hlreg0JumboEn); g.wr(i82599.MAXFRS, 9018<<16) }, g.frame(1519, 0), true},
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
	if g.rd(intelnic.RUC) != 1 || g.rd(intelnic.ROC) != 1 {
		t.Error("RUC/ROC not counted")
	}
}

func TestRXMultiDescriptorAndCRC(t *testing.T) {
	g := newReadyRig(t)
	g.setBits(i82599.HLREG0, i82599.Hlreg0JumboEn)
	g.wr(i82599.MAXFRS, 9018<<16)
	rx := g.setupRX(0, 16, 1024, true)
	f := g.frame(2500, 3)
	g.peer.Send(f)
	var got []byte
	for i, want := range []struct{ st uint32 }{{intelnic.RxStatusDD}, {intelnic.RxStatusDD}, {intelnic.RxStatusDD | intelnic.RxStatusEOP}} {
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
	g.clearBits(i82599.HLREG0, i82599.Hlreg0RxCRCStrp)
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
		{X82599, i82599.QPRDC},
		{X82576, func(q int) uint32 { return 0xC030 + intelnic.QStride*uint32(q) }},
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
		g := newReadyRig(t)
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
		g.wr(g.rxq(0, intelnic.QT), 2)
		if st := g.m.Stats(); st.RxFrames != 10 {
			t.Fatalf("after RDT: %d frames placed, want 10", st.RxFrames)
		}
		st, _ := rx.wb(1)
		if st&intelnic.RxStatusDD == 0 || rx.buf(1)[14] != 9+14 {
			t.Fatal("buffered frame 9 not in descriptor 1")
		}
		// A full packet buffer misses.
		g.wr(i82599.RXPBSIZE0, 1<<10) // 1 KB
		for i := 0; i < 20; i++ {
			g.peer.Send(g.frame(100, 0))
		}
		if g.m.Stats().Missed == 0 {
			t.Fatal("overflowing packet buffer missed nothing")
		}
	})
}

// TestDDWrittenLast runs a reader that polls DD concurrently with the model writing
// back frames of changing lengths: whenever it sees DD it must see that frame's length.
// Run with -race: the reader's atomic DD load orders its length read after the model's.
func TestDDWrittenLast(t *testing.T) {
	g := newReadyRig(t)
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
				if st&intelnic.RxStatusDD != 0 {
					if l != sizes[k] {
						done <- errorf("frame %d: DD with length %d, want %d", k, l, sizes[k])
						return
					}
					break
				}
			}
			rx.post(next)
			g.wr(g.rxq(0, intelnic.QT), uint32(next))
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
