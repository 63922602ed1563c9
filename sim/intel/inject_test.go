package intel

import (
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/sim"
)

// queueIRQ routes RX and TX queue q's causes to one interrupt, MSI-X vector 0 (auto-
// cleared) or the legacy INTx line, and unmasks it.
type queueIRQ struct {
	g    *rig
	v    *irq.Vector
	intx bool
}

func (g *rig) queueIRQ(intx bool, q int) *queueIRQ {
	g.t.Helper()
	l := g.m.l
	ir := &queueIRQ{g: g, intx: intx}
	kind, n := irq.MSIX, 2
	if intx {
		kind, n = irq.INTx, 1
	}
	vs, err := g.dev.IRQs(kind, n)
	if err != nil {
		g.t.Fatal(err)
	}
	ir.v = vs[0]
	if !intx {
		g.wr(l.gpie, intelnic.GpieMSIXMode)
		g.wr(l.eiac, 1)
	}
	for _, tx := range []bool{false, true} {
		off, shift := l.ivarEntry(q, tx)
		g.wr(off, g.rd(off)&^(0xFF<<shift)|0x80<<shift) // vector / EICR bit 0
	}
	if intx && g.m.cfg.Flavor == X82576 {
		g.wr(i82576.IMS, i82576.IcrRXDW|i82576.IcrTXDW) // the 82576's INTx follows ICR
	} else {
		g.wr(l.eims, 1)
	}
	return ir
}

// fired returns how many interrupts arrived since the last call and, under INTx,
// acknowledges the causes and re-arms the line as a uio driver does.
func (ir *queueIRQ) fired(t *testing.T) uint64 {
	t.Helper()
	n := testutil.Drain(t, ir.v)
	if ir.intx {
		if ir.g.m.cfg.Flavor == X82576 {
			ir.g.rd(i82576.ICR)
		} else {
			ir.g.rd(ir.g.m.l.eicr)
		}
		if err := ir.v.Rearm(); err != nil {
			t.Fatal(err)
		}
		n += testutil.Drain(t, ir.v)
	}
	return n
}

// eventuallyFired waits until at least one interrupt arrived.
func (ir *queueIRQ) eventuallyFired(t *testing.T, what string) {
	t.Helper()
	var n uint64
	testutil.Eventually(t, 2*time.Second, func() bool { n += ir.fired(t); return n > 0 }, "%s: no interrupt", what)
}

// TestInjections runs every injectable fault on both flavours, under MSI-X and under
// INTx (the only interrupt uio_pci_generic has), on queue 0 and on RSS queue 2, and
// checks its effect on that queue: what the ring shows, what the model counts, and the
// interrupt the queue raises.
func TestInjections(t *testing.T) {
	type env struct {
		g  *rig
		q  int
		rx *ring
		tx *ring
		ir *queueIRQ
	}
	send := func(e *env, seed int) { e.g.peer.Send(frameForMAC(e.g, uint16(seed))) }
	sendTX := func(e *env, i int) {
		e.tx.fillTX(i, e.g.frame(64, byte(i)), txCmd)
		e.g.wr(e.g.txq(e.q, intelnic.QT), uint32(i+1))
	}
	inject := func(t *testing.T, e *env, in Injection) {
		t.Helper()
		if err := e.g.m.Inject(in); err != nil {
			t.Fatal(err)
		}
	}
	dd := func(r *ring, i int) bool {
		st, _ := r.wb(i)
		return st&intelnic.RxStatusDD != 0
	}
	// loses injects in and checks that the next frame is not placed and is counted by
	// count, then that the queue takes the frame after it, with one interrupt.
	loses := func(t *testing.T, e *env, in Injection, count func(Stats) uint64, what string) {
		t.Helper()
		inject(t, e, in)
		send(e, 1)
		if dd(e.rx, 0) || count(e.g.m.Stats()) != 1 {
			t.Fatalf("%s: %+v", what, e.g.m.Stats())
		}
		send(e, 2)
		if !dd(e.rx, 0) || e.ir.fired(t) != 1 {
			t.Fatal("next frame not received with one interrupt")
		}
	}
	txDone := func(r *ring, i int) bool { return sim.LoadUint32(r.desc.Bytes[16*i+12:])&intelnic.TxStatusDD != 0 }
	tests := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"rx-drop", func(t *testing.T, e *env) {
			loses(t, e, Injection{Kind: RxDrop, Queue: e.q}, func(s Stats) uint64 { return s.Dropped }, "frame not dropped")
		}},
		{"rx-oversize", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: RxOversize, Queue: e.q})
			send(e, 1)
			if st, l := e.rx.wb(0); st&intelnic.RxStatusDD == 0 || l <= e.rx.bsize {
				t.Fatalf("write-back status %#x length %d, want a length beyond %d", st, l, e.rx.bsize)
			}
			if e.ir.fired(t) != 1 {
				t.Fatal("no interrupt")
			}
		}},
		{"rx-bad-dma", func(t *testing.T, e *env) {
			e.g.allowFaults = true
			loses(t, e, Injection{Kind: RxBadDMA, Queue: e.q}, func(s Stats) uint64 { return s.DMAFaults }, "bad DMA not faulted")
		}},
		{"rx-unposted-dd", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: RxUnpostedDD, Queue: e.q})
			tail := int(e.g.rd(e.g.rxq(e.q, intelnic.QT)))
			if !dd(e.rx, tail) || e.g.rd(e.g.rxq(e.q, intelnic.QH)) != 0 {
				t.Fatal("no DD at RDT, or RDH moved")
			}
		}},
		{"rx-stall", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: RxStall, Queue: e.q, Delay: 5 * time.Millisecond})
			send(e, 1)
			testutil.Eventually(t, 2*time.Second, func() bool { return dd(e.rx, 0) }, "stalled frame never placed")
			if st := e.g.m.Stats(); st.Buffered != 1 {
				t.Fatalf("frame did not wait in the packet buffer: %+v", st)
			}
			e.ir.eventuallyFired(t, "stalled frame")
		}},
		{"tx-writeback-delay", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: TxWritebackDelay, Queue: e.q, Delay: 200 * time.Millisecond})
			e.ir.fired(t)
			sendTX(e, 0)
			sendTX(e, 1) // held in order behind descriptor 0
			if n := len(e.g.received()); n != 2 {
				t.Fatalf("%d frames on the wire, want 2 at once", n)
			}
			if txDone(e.tx, 0) || txDone(e.tx, 1) {
				t.Fatal("write-back not held")
			}
			testutil.Eventually(t, 5*time.Second, func() bool { return txDone(e.tx, 0) && txDone(e.tx, 1) }, "held write-backs never written")
			e.ir.eventuallyFired(t, "delayed write-back")
		}},
		{"tx-writeback-lost", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: TxWritebackLost, Queue: e.q})
			sendTX(e, 0)
			sendTX(e, 1)
			if n := len(e.g.received()); n != 2 {
				t.Fatalf("%d frames on the wire, want 2", n)
			}
			if txDone(e.tx, 0) || !txDone(e.tx, 1) || e.g.m.Stats().TxWritebackLost != 1 {
				t.Fatalf("DD %v %v: want descriptor 0's write-back lost, 1's written", txDone(e.tx, 0), txDone(e.tx, 1))
			}
		}},
		{"tx-hang", func(t *testing.T, e *env) {
			inject(t, e, Injection{Kind: TxHang, Queue: e.q})
			sendTX(e, 0)
			if n := len(e.g.received()); n != 0 || e.g.rd(e.g.txq(e.q, intelnic.QH)) != 0 {
				t.Fatalf("hung queue sent %d frames", n)
			}
			// The driver's recovery: disable the queue, set the ring up again, resend.
			e.tx = e.g.setupTX(e.q, 16, 2048)
			sendTX(e, 0)
			if n := len(e.g.received()); n != 1 || !txDone(e.tx, 0) {
				t.Fatalf("after recovery %d frames sent", n)
			}
			if e.g.m.Stats().TxHangs != 1 {
				t.Fatal("hang not counted")
			}
		}},
		{"tx-bad-dma", func(t *testing.T, e *env) {
			e.g.allowFaults = true
			inject(t, e, Injection{Kind: TxBadDMA, Queue: e.q})
			sendTX(e, 0)
			if n := len(e.g.received()); n != 0 || e.g.m.Stats().DMAFaults != 1 || !txDone(e.tx, 0) {
				t.Fatalf("%d frames sent, stats %+v, DD %v", n, e.g.m.Stats(), txDone(e.tx, 0))
			}
			sendTX(e, 1)
			if n := len(e.g.received()); n != 1 {
				t.Fatal("next frame not sent")
			}
		}},
		{"spurious", func(t *testing.T, e *env) {
			e.ir.fired(t)
			inject(t, e, Injection{Kind: Spurious})
			if n := e.ir.fired(t); n != 1 || e.g.m.Stats().Spurious != 1 {
				t.Fatalf("%d interrupts, want 1", n)
			}
		}},
		{"storm", func(t *testing.T, e *env) {
			e.ir.fired(t)
			inject(t, e, Injection{Kind: Storm, Count: 5})
			n := e.ir.fired(t)
			want := uint64(5)
			if e.ir.intx {
				want = 1 // the line fires once, then stays masked until re-armed
			}
			if n != want || e.g.m.Stats().Spurious != 5 {
				t.Fatalf("%d interrupts, want %d", n, want)
			}
		}},
		{"link-flap", func(t *testing.T, e *env) {
			before := e.g.m.Stats().LinkChanges
			inject(t, e, Injection{Kind: LinkFlap})
			if d := e.g.m.Stats().LinkChanges - before; d != 2 || !e.g.m.Link() {
				t.Fatalf("%d link changes, link %v", d, e.g.m.Link())
			}
		}},
	}
	for _, flavor := range []Flavor{X82599, X82576} {
		for _, intx := range []bool{false, true} {
			for _, q := range []int{0, 2} {
				mode := "msix"
				if intx {
					mode = "intx"
				}
				for _, tt := range tests {
					t.Run(fmt.Sprintf("%v/%s/q%d/%s", flavor, mode, q, tt.name), func(t *testing.T) {
						g := newRig(t, Config{Flavor: flavor})
						g.initDevice()
						e := &env{g: g, q: q}
						if q != 0 {
							g.setupRX(0, 16, 2048, true)
						}
						e.rx = g.setupRX(q, 16, 2048, true)
						e.tx = g.setupTX(q, 16, 2048)
						g.steerTo(q)
						e.ir = g.queueIRQ(intx, q)
						e.ir.fired(t)
						tt.run(t, e)
						if q != 0 && dd(&g.rx[0], 0) {
							t.Fatal("a frame reached queue 0")
						}
					})
				}
			}
		}
	}
}

// TestInjectRefusesBadQueue checks that an injection for a queue the port does not have
// is refused.
func TestInjectRefusesBadQueue(t *testing.T) {
	g := newRig(t, Config{Flavor: X82576})
	if err := g.m.Inject(Injection{Kind: RxDrop, Queue: 16}); err == nil {
		t.Fatal("queue 16 of 16 accepted")
	}
	if err := g.m.Inject(Injection{Kind: Injected(99)}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}
