package intel

import (
	"bytes"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

func TestIGBInitAndTraffic(t *testing.T) {
	g := newRig(t, Config{Flavor: X82576, Timing: Timing{Autoneg: 5 * time.Millisecond}})
	g.initDevice()
	if id := g.mdicRead(i82576.PHYID1); id != phyIDValue>>16 {
		t.Fatalf("PHY id %#x", id)
	}
	if st := g.rd(intelnic.STATUS); st&i82576.StatusLU == 0 || st&i82576.StatusSpeed1000 == 0 {
		t.Fatalf("STATUS %#x: no 1000 Mb/s link", st)
	}
	if g.rd(g.m.l.ral(0)) != 0x01000002 {
		t.Fatal("MAC not in RAL0 at 0x5400")
	}
	rx := g.setupRX(0, 32, 2048, true)
	tx := g.setupTX(0, 32, 2048)
	for k := 0; k < 100; k++ {
		f := g.frame(60+k*13, byte(k))
		g.peer.Send(f)
		i := k % 32
		st, l := rx.wb(i)
		if st != intelnic.RxStatusDD|intelnic.RxStatusEOP || !bytes.Equal(rx.buf(i)[:l], f) {
			t.Fatalf("frame %d: status %#x length %d", k, st, l)
		}
		rx.post(i)
		g.wr(g.rxq(0, intelnic.QT), uint32(i))
		tx.fillTX(i, f, txCmd)
		g.wr(g.txq(0, intelnic.QT), uint32((i+1)%32))
		if got := g.received(); len(got) != 1 || !bytes.Equal(got[0], f) {
			t.Fatalf("frame %d not echoed", k)
		}
	}
	if g.rd(intelnic.GPRC) != 100 || g.rd(intelnic.GPTC) != 100 || g.rd(0x10010) != 100 {
		t.Fatal("statistics")
	}
	// Without SECRC the FCS stays in the buffer.
	g.clearBits(i82576.RCTL, i82576.RctlSECRC)
	g.peer.Send(g.frame(100, 1))
	if _, l := rx.wb(100 % 32); l != 104 {
		t.Fatalf("length %d without SECRC", l)
	}
}

func TestIGBMSIX(t *testing.T) {
	g := newRig(t, Config{Flavor: X82576})
	g.initDevice()
	vs, err := g.dev.IRQs(irq.MSIX, 3)
	if err != nil {
		t.Fatal(err)
	}
	g.wr(g.m.l.gpie, intelnic.GpieMSIXMode|intelnic.GpieEIAME|1<<31|i82576.GpieNSICR)
	// RX queue 1 → vector 1 (IVAR0[1] byte 0), other causes → vector 2.
	g.wr(g.m.l.ivar0+4, 0x81)
	g.wr(g.m.l.ivarMisc, 0x82<<8)
	g.wr(g.m.l.eiac, 0x2)
	g.setupRX(1, 16, 2048, true)
	g.wr(g.m.l.mrqc, 0) // queue 0 only without RSS: steer with RSS off → use queue 1 via RETA
	g.wr(intelnic.RXCSUM, intelnic.RxcsumPCSD)
	for i := 0; i < 32; i++ {
		g.wr(g.m.l.reta+4*uint32(i), 0x01010101)
	}
	g.wr(g.m.l.mrqc, 2|intelnic.MrqcIPv4)
	f := frameForMAC(g, 17)
	g.peer.Send(f)
	if testutil.Drain(t, vs[1]) != 0 {
		t.Fatal("masked vector fired")
	}
	g.wr(g.m.l.eims, 0x2|0x4)
	if testutil.Drain(t, vs[1]) != 1 {
		t.Fatal("unmask did not fire the pending queue cause")
	}
	if g.rd(g.m.l.eics)&0x2 != 0 {
		t.Fatal("EIAC did not clear the cause")
	}
	// LSC: ICR cause, enabled in IMS, fires the other vector.
	g.wr(i82576.IMS, i82576.IcrLSC)
	g.m.FlapLink(0)
	if n := testutil.Drain(t, vs[2]); n != 1 {
		t.Fatalf("LSC fired the other vector %d times", n)
	}
	if g.rd(i82576.ICR)&i82576.IcrLSC == 0 {
		t.Fatal("ICR.LSC not set")
	}
	if g.rd(i82576.ICR) != 0 {
		t.Fatal("ICR not cleared by read with GPIE.NSICR")
	}
}

// frameForMAC is an IPv4/UDP frame to the model's MAC.
func frameForMAC(g *rig, sport uint16) []byte {
	f := g.frame(128, 0)
	copy(f[12:], []byte{0x08, 0x00, 0x45, 0, 0, 100, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2})
	f[34], f[35] = byte(sport>>8), byte(sport)
	return f
}

// TestIGBLegacyINTx checks the 82576's INTx path: RXDW asserts the line for a queue whose
// cause IVAR allocates (Linux's legacy path maps queue 0 to EICR bit 0), not for a queue
// without an entry on silicon, and for any queue with QEMU's RXDWWithoutIVAR.
func TestIGBLegacyINTx(t *testing.T) {
	tests := []struct {
		name   string
		ivar   bool
		quirks Quirks
		fires  bool
	}{
		{"ivar", true, Quirks{}, true},
		{"no ivar", false, Quirks{}, false},
		{"no ivar qemu", false, Quirks{RXDWWithoutIVAR: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testIGBLegacyINTx(t, tt.ivar, tt.quirks, tt.fires) })
	}
}

func testIGBLegacyINTx(t *testing.T, ivar bool, quirks Quirks, fires bool) {
	g := newRig(t, Config{Flavor: X82576, Quirks: quirks})
	g.initDevice()
	v := g.intx(t)
	if ivar {
		g.wr(g.m.l.ivar0, 0x80) // RX queue 0 → EICR bit 0
	}
	g.setupRX(0, 16, 2048, true)
	g.rd(i82576.ICR)
	g.wr(i82576.IMS, i82576.IcrRXDW|i82576.IcrLSC)
	g.peer.Send(g.frame(64, 0))
	if !fires {
		if n := testutil.Drain(t, v); n != 0 || g.rd(i82576.ICR)&i82576.IcrRXDW != 0 {
			t.Fatalf("a queue without an IVAR entry raised RXDW (%d interrupts)", n)
		}
		return
	}
	if testutil.Drain(t, v) != 1 {
		t.Fatal("RXDW did not assert INTx")
	}
	if c := g.rd(i82576.ICR); c&i82576.IcrRXDW == 0 || c&i82576.IcrAsserted == 0 {
		t.Fatalf("ICR %#x", c)
	}
	v.Rearm()
	if testutil.Drain(t, v) != 0 {
		t.Fatal("fired after ICR read")
	}
	g.peer.Send(g.frame(64, 1))
	if testutil.Drain(t, v) != 1 {
		t.Fatal("next frame did not fire")
	}
}
