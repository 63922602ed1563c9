package intel

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

func TestTXPath(t *testing.T) {
	g := newReadyRig(t)
	tx := g.setupTX(0, 16, 2048)
	rnd := rand.New(rand.NewPCG(3, 4))
	var want [][]byte
	tail := 0
	for k := 0; k < 40; k++ {
		f := g.frame(60+rnd.IntN(1454), byte(k))
		want = append(want, f)
		tx.fillTX(tail, f, txCmd)
		tail = (tail + 1) % 16
		g.wr(g.txq(0, intelnic.QT), uint32(tail))
		if h := g.rd(g.txq(0, intelnic.QH)); h != uint32(tail) {
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
	if g.rd(intelnic.GPTC) != 40 {
		t.Error("GPTC")
	}
	if sim.LoadUint32(tx.desc.Bytes[12:])&intelnic.TxStatusDD == 0 {
		t.Error("DD not written back")
	}

	// A frame over two descriptors, RS only on the last; a short frame padded; a frame
	// without IFCS refused; a context descriptor skipped.
	f := g.frame(300, 9)
	tx.fillTX(tail, f[:100], intelnic.TxdDEXT)
	tx.fillTX((tail+1)%16, f[100:], txCmd)
	binary.LittleEndian.PutUint64(tx.desc.Bytes[16*((tail+1)%16):], tx.bufs.IOVA+uint64(((tail+1)%16)*2048))
	ctx := tx.desc.Bytes[16*((tail+2)%16):]
	binary.LittleEndian.PutUint64(ctx, 0)
	binary.LittleEndian.PutUint32(ctx[8:], intelnic.TxdDEXT|intelnic.TxdTypeCtx<<20)
	binary.LittleEndian.PutUint32(ctx[12:], 0)
	tx.fillTX((tail+3)%16, f[:20], txCmd)
	tx.fillTX((tail+4)%16, f[:64], intelnic.TxdDEXT|intelnic.TxdRS|intelnic.TxdEOP) // no IFCS
	sim.StoreUint32(tx.desc.Bytes[16*tail+12:], 0)
	tail = (tail + 5) % 16
	g.wr(g.txq(0, intelnic.QT), uint32(tail))
	got = g.received()
	if len(got) != 2 || !bytes.Equal(got[0], f) || len(got[1]) != 60 || !bytes.Equal(got[1][:20], f[:20]) {
		t.Fatalf("got %d frames", len(got))
	}
	if st := g.m.Stats(); st.TxNoFCS != 1 {
		t.Errorf("TxNoFCS %d", st.TxNoFCS)
	}
}

func TestTXHeadWriteBackAndGating(t *testing.T) {
	g := newReadyRig(t)
	tx := g.setupTX(0, 8, 2048) // TE on first: the 82599 enables no TX queue without it
	g.wr(i82599.DMATXCTL, 0)
	hw, _ := g.dev.DMA().Alloc(64)
	g.wr(g.txq(0, intelnic.QWBAL), uint32(hw.IOVA)|intelnic.TdwbalEnable)
	g.wr(g.txq(0, intelnic.QWBAH), uint32(hw.IOVA>>32))
	tx.fillTX(0, g.frame(64, 1), txCmd)
	g.wr(g.txq(0, intelnic.QT), 1)
	if len(g.received()) != 0 {
		t.Fatal("sent with DMATXCTL.TE off")
	}
	g.wr(i82599.DMATXCTL, 1) // TE on: pending descriptors go
	if len(g.received()) != 1 || sim.LoadUint32(hw.Bytes) != 1 {
		t.Fatal("TE on did not send, or head not written back")
	}
	if sim.LoadUint32(tx.desc.Bytes[12:])&intelnic.TxStatusDD != 0 {
		t.Fatal("DD written back although head write-back replaces it")
	}
}

func TestLegacyTXDescriptor(t *testing.T) {
	g := newReadyRig(t)
	tx := g.setupTX(0, 8, 2048)
	f := g.frame(100, 7)
	copy(tx.buf(0), f)
	d := tx.desc.Bytes
	binary.LittleEndian.PutUint64(d, tx.bufs.IOVA)
	binary.LittleEndian.PutUint32(d[8:], uint32(len(f))|uint32(intelnic.LegacyEOP|intelnic.LegacyIFCS|intelnic.LegacyRS)<<24)
	binary.LittleEndian.PutUint32(d[12:], 0)
	g.wr(g.txq(0, intelnic.QT), 1)
	if got := g.received(); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatal("legacy descriptor not sent")
	}
	if d[12]&intelnic.TxStatusDD == 0 {
		t.Fatal("no DD in the legacy status byte")
	}
}
