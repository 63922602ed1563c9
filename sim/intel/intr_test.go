package intel

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

// setupMSIX puts the model in MSI-X mode with RX queue 0 on vector 0, LSC on vector 1.
func (g *rig) setupMSIX(eiac bool) []*irq.Vector {
	g.t.Helper()
	vs, err := g.dev.IRQs(irq.MSIX, 2)
	if err != nil {
		g.t.Fatal(err)
	}
	g.wr(g.m.l.gpie, intelnic.GpieMSIXMode|1<<31|intelnic.GpieEIAME)
	g.wr(g.m.l.ivar0, 0x80)       // RX queue 0 → vector 0
	g.wr(g.m.l.ivarMisc, 0x81<<8) // other causes → vector 1
	if eiac {
		g.wr(g.m.l.eiac, 1)
	}
	return vs
}

func TestMSIXMaskUnmaskAutoClear(t *testing.T) {
	g := newReadyRig(t)
	vs := g.setupMSIX(true)
	g.setupRX(0, 16, 2048, true)
	g.peer.Send(g.frame(64, 0))
	if testutil.Drain(t, vs[0]) != 0 {
		t.Fatal("masked queue fired")
	}
	if g.rd(g.m.l.eics)&1 == 0 {
		t.Fatal("cause not pending while masked")
	}
	g.wr(g.m.l.eims, 1) // unmask: the pending cause fires at once
	if testutil.Drain(t, vs[0]) != 1 {
		t.Fatal("unmask did not fire the pending cause")
	}
	if g.rd(g.m.l.eics)&1 != 0 {
		t.Fatal("EIAC did not auto-clear the cause")
	}
	g.peer.Send(g.frame(64, 1))
	if testutil.Drain(t, vs[0]) != 1 {
		t.Fatal("new frame did not fire")
	}
	// EIAM auto-mask (GPIE.EIAME): the vector masks itself when it fires.
	g.wr(g.m.l.eiam, 1)
	g.peer.Send(g.frame(64, 2))
	g.peer.Send(g.frame(64, 3))
	if testutil.Drain(t, vs[0]) != 1 || g.rd(g.m.l.eims)&1 != 0 {
		t.Fatal("EIAM did not auto-mask")
	}
	// Without EIAC the cause stays until the driver clears it: no new message.
	g.wr(g.m.l.eiam, 0)
	g.wr(g.m.l.eiac, 0)
	g.wr(g.m.l.eims, 1)
	testutil.Drain(t, vs[0])
	g.wr(g.m.l.eicr, 1) // the driver acknowledges
	g.peer.Send(g.frame(64, 4))
	g.peer.Send(g.frame(64, 5))
	if n := testutil.Drain(t, vs[0]); n != 1 {
		t.Fatalf("cause held: %d messages, want 1", n)
	}
	if st := g.m.Stats(); st.Interrupts == 0 || st.LostInterrupts != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEITRSpacing(t *testing.T) {
	g := newReadyRig(t)
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
			testutil.Drain(t, vs[0])
			continue
		}
		// Both messages must arrive, the second no earlier than one interval after the
		// first frame was sent (a lower bound, safe on a noisy machine).
		var got uint64
		testutil.WaitFor(time.Second, func() bool { got += testutil.Drain(t, vs[0]); return got >= 2 })
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
	g := newReadyRig(t)
	vs := g.setupMSIX(false)
	g.wr(g.m.l.eims, i82599.EicrLSC)
	g.m.FlapLink(0)
	if n := testutil.Drain(t, vs[1]); n != 1 {
		t.Fatalf("LSC fired %d times, want 1 (cause held until cleared)", n)
	}
	if g.rd(g.m.l.eicr)&i82599.EicrLSC == 0 {
		t.Fatal("LSC not in EICR")
	}
	g.m.SetLink(false)
	if testutil.Drain(t, vs[1]) != 1 || g.rd(i82599.LINKS)&i82599.LinksUp != 0 {
		t.Fatal("link down not signalled")
	}
	g.m.SetLink(true)
	if g.rd(i82599.LINKS)&i82599.LinksUp == 0 {
		t.Fatal("link not back")
	}
}

func TestLegacyINTx(t *testing.T) {
	g, v := newLegacyRig(t, 16)
	g.peer.Send(g.frame(64, 0))
	if testutil.Drain(t, v) != 0 {
		t.Fatal("masked INTx fired")
	}
	g.wr(g.m.l.eims, 1)
	if testutil.Drain(t, v) != 1 {
		t.Fatal("unmask did not assert INTx")
	}
	g.peer.Send(g.frame(64, 1))
	if testutil.Drain(t, v) != 0 {
		t.Fatal("fired again before rearm")
	}
	v.Rearm() // still asserted (EICR not read): fires again
	if testutil.Drain(t, v) != 1 {
		t.Fatal("rearm of an asserted line did not fire")
	}
	if g.rd(g.m.l.eicr)&1 == 0 {
		t.Fatal("EICR lost the cause")
	}
	v.Rearm() // acknowledged: quiet
	if testutil.Drain(t, v) != 0 {
		t.Fatal("fired after EICR read")
	}
	g.peer.Send(g.frame(64, 2))
	if testutil.Drain(t, v) != 1 {
		t.Fatal("next frame did not fire")
	}
}

func TestExtendedVectorsAndMisc(t *testing.T) {
	g := newReadyRig(t)
	vs, err := g.dev.IRQs(irq.MSIX, 24)
	if err != nil {
		t.Fatal(err)
	}
	g.wr(g.m.l.gpie, intelnic.GpieMSIXMode)
	// RX queue 3 → vector 20, beyond EICR's 16 vector bits: EIMS_EX/EIMC_EX/EICS_EX.
	g.wr(g.m.l.ivar0+4*1, 0x94<<16)
	g.setupRX(3, 8, 2048, true)
	for i := 0; i < 32; i++ {
		g.wr(g.m.l.reta+4*uint32(i), 0x03030303)
	}
	g.wr(intelnic.RXCSUM, intelnic.RxcsumPCSD)
	g.wr(g.m.l.mrqc, 1|intelnic.MrqcIPv4)
	g.peer.Send(frameForMAC(g, 9))
	if testutil.Drain(t, vs[20]) != 0 {
		t.Fatal("masked extended vector fired")
	}
	g.wr(i82599.EIMSEx0, 1<<20)
	if g.rd(i82599.EIMSEx0) != 1<<20 || testutil.Drain(t, vs[20]) != 1 {
		t.Fatal("EIMS_EX unmask did not fire vector 20")
	}
	g.wr(i82599.EIMCEx0, 1<<20)
	if g.rd(i82599.EIMSEx0) != 0 {
		t.Fatal("EIMC_EX did not mask")
	}
	g.wr(i82599.EIMSEx0, 1<<21)
	g.wr(i82599.EICSEx0, 1<<21)
	if testutil.Drain(t, vs[21]) != 1 {
		t.Fatal("EICS_EX did not fire vector 21")
	}

	// EEPROM read through EERD, the software semaphore, accessors.
	g.wr(i82599.EERD, 3<<2|intelnic.EerdStart)
	if g.rd(i82599.EERD)&intelnic.EerdDone == 0 {
		t.Fatal("EERD not done")
	}
	if g.rd(i82599.SWSM)&1 != 0 || g.rd(i82599.SWSM)&1 == 0 {
		t.Fatal("SWSM semaphore: first read must get it, second must see it taken")
	}
	g.wr(i82599.SWSM, 0)
	if g.rd(i82599.SWSM)&1 != 0 {
		t.Fatal("SWSM not released")
	}
	if !g.m.Link() || g.m.Flavor() != X82599 || g.m.MAC().String() != "02:00:00:01:00:01" {
		t.Fatal("accessors")
	}
}

// TestIGBIVARBeforeGPIE checks the 82576's ordering rule: IVAR entries written before
// GPIE switches to MSI-X mode are lost (a strict model reports it), so the queue's vector
// never fires; written after GPIE, they stick.
func TestIGBIVARBeforeGPIE(t *testing.T) {
	for _, ivarFirst := range []bool{false, true} {
		name := map[bool]string{false: "gpie first", true: "ivar first"}[ivarFirst]
		t.Run(name, func(t *testing.T) {
			g := newRig(t, Config{Flavor: X82576})
			g.allowFaults = ivarFirst
			g.initDevice()
			vs, err := g.dev.IRQs(irq.MSIX, 2)
			if err != nil {
				t.Fatal(err)
			}
			gpie := func() { g.wr(g.m.l.gpie, intelnic.GpieMSIXMode|intelnic.GpiePBASupport|i82576.GpieNSICR) }
			if !ivarFirst {
				gpie()
			}
			g.wr(g.m.l.ivar0, 0x80) // RX queue 0 → vector 0
			if ivarFirst {
				gpie()
			}
			g.setupRX(0, 16, 2048, true)
			g.wr(g.m.l.eims, 1)
			g.peer.Send(g.frame(64, 0))
			n := testutil.Drain(t, vs[0])
			err = g.m.Device().Err()
			if ivarFirst {
				if n != 0 || g.rd(g.m.l.ivar0) != 0 {
					t.Errorf("IVAR written before GPIE stuck: %d messages, IVAR0 %#x", n, g.rd(g.m.l.ivar0))
				}
				testutil.ErrorContains(t, err, "GPIE.MSIX_MODE changed after IVAR")
				return
			}
			if n != 1 || err != nil {
				t.Fatalf("%d messages (want 1), model: %v", n, err)
			}
		})
	}
}

// TestOtherClearDisable checks the 82599's GPIE.OCD: with it set, reading EICR leaves the
// other causes (LSC) for a write to clear; without it a read clears them.
func TestOtherClearDisable(t *testing.T) {
	for _, ocd := range []bool{false, true} {
		name := map[bool]string{false: "ocd clear", true: "ocd set"}[ocd]
		t.Run(name, func(t *testing.T) {
			g := newReadyRig(t)
			g.setupMSIX(false)
			if ocd {
				g.setBits(g.m.l.gpie, i82599.GpieOCD)
			}
			g.m.SetLink(false)
			if g.rd(g.m.l.eicr)&i82599.EicrLSC == 0 {
				t.Fatal("LSC not in EICR")
			}
			left := g.rd(g.m.l.eics)&i82599.EicrLSC != 0 // EICS reads the causes without clearing
			if left != ocd {
				t.Fatalf("LSC left after an EICR read: %v, want %v (GPIE.OCD %v)", left, ocd, ocd)
			}
			g.wr(g.m.l.eicr, i82599.EicrLSC)
			if g.rd(g.m.l.eics)&i82599.EicrLSC != 0 {
				t.Fatal("writing EICR did not clear LSC")
			}
		})
	}
}
