package intel

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

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
