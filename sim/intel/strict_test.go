package intel

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// wantFault fails the test unless the strict model recorded a protocol fault whose
// message contains msg.
func wantFault(t *testing.T, g *rig, msg string) {
	t.Helper()
	faults, _ := g.dev.Faults()
	for _, f := range faults {
		if f.Kind == sim.Protocol && strings.Contains(f.Msg, msg) {
			if g.dev.Err() == nil {
				t.Fatal("fault recorded but the strict device reports no error")
			}
			return
		}
	}
	t.Fatalf("no protocol fault %q; faults: %v", msg, faults)
}

// timings is the configuration of a case whose right sequence runs with right's timing
// and whose wrong one with wrong's.
func timings(right, wrong Timing) func(bool) Config {
	return func(r bool) Config {
		if r {
			return Config{Timing: right}
		}
		return Config{Timing: wrong}
	}
}

// long is a time no test waits for: an operation that takes it never completes in the
// test, so a driver that does not wait for it is caught whatever the machine's load.
const long = time.Hour

// TestWrongDriverFails runs, for each behaviour the model enforces as the silicon does,
// a driver sequence that violates it (the model must catch it: a fault, a register that
// did not take the write, a link that stays down) and the right sequence (the strict
// model must accept it without a fault).
func TestWrongDriverFails(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(right bool) Config
		run  func(t *testing.T, g *rig, right bool)
	}{
		{"reset takes time", func(right bool) Config {
			return Config{Timing: Timing{Reset: 20 * time.Millisecond}}
		}, func(t *testing.T, g *rig, right bool) {
			g.wr(intelnic.CTRL, intelnic.CtrlReset)
			if g.rd(intelnic.CTRL)&intelnic.CtrlReset == 0 {
				t.Fatal("CTRL.RST reads 0 at once")
			}
			if right {
				g.waitClear(intelnic.CTRL, intelnic.CtrlReset)
			}
			g.wr(g.m.l.eimc, 0x7FFFFFFF)
			if !right {
				wantFault(t, g, "while CTRL.RST still reads 1")
			}
		}},
		{"EEPROM auto-read takes time", timings(Timing{EEPROM: 5 * time.Millisecond}, Timing{EEPROM: long}), func(t *testing.T, g *rig, right bool) {
			g.wr(intelnic.CTRL, intelnic.CtrlReset)
			g.waitClear(intelnic.CTRL, intelnic.CtrlReset)
			if right {
				g.waitSet(i82599.EEC, intelnic.EecAutoRead)
			}
			mac := g.m.cfg.MAC
			got := g.rd(g.m.l.rah(0))
			want := uint32(mac[4]) | uint32(mac[5])<<8 | intelnic.RahAV
			if right != (got == want) {
				t.Fatalf("RAH0 %#x after reset (auto-read waited for: %v), station address %#x", got, right, want)
			}
		}},
		{"DMA init takes time", timings(Timing{DMAInit: 5 * time.Millisecond}, Timing{DMAInit: long}), func(t *testing.T, g *rig, right bool) {
			g.wr(intelnic.CTRL, intelnic.CtrlReset)
			g.waitClear(intelnic.CTRL, intelnic.CtrlReset)
			g.waitSet(i82599.EEC, intelnic.EecAutoRead)
			if right {
				g.waitSet(i82599.RDRXCTL, i82599.RdrxctlDMAIDone)
			}
			g.setBits(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			if !right {
				wantFault(t, g, "before RDRXCTL.DMAIDONE")
			}
		}},
		{"queue enable completes later; tail before it is ignored", timings(Timing{QueueEnable: 2 * time.Millisecond}, Timing{QueueEnable: long}), func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			g.programRX(0, 8, 2048, true)
			g.setBits(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			if right {
				g.waitSet(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			}
			g.wr(g.rxq(0, intelnic.QT), 7)
			g.enableRX()
			if right {
				g.peer.Send(g.frame(64, 1))
				if st, l := g.rx[0].wb(0); st&intelnic.RxStatusDD == 0 || l != 64 {
					t.Fatalf("frame not received: status %#x length %d", st, l)
				}
				return
			}
			if got := g.rd(g.rxq(0, intelnic.QT)); got != 0 {
				t.Fatalf("RDT %d: a tail write before ENABLE read 1 stood", got)
			}
			wantFault(t, g, "before the queue's ENABLE reads 1")
		}},
		{"queue disable completes later; the ring is latched while enabled", func(right bool) Config {
			return Config{Timing: Timing{QueueEnable: 20 * time.Millisecond}}
		}, func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			old := g.setupRX(0, 8, 2048, true)
			oldBase := old.desc.IOVA
			g.clearBits(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			if right {
				g.waitClear(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			}
			nw := g.programRX(0, 8, 2048, true) // a new ring, as after a reconfiguration
			g.setBits(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			g.waitSet(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			g.wr(g.rxq(0, intelnic.QT), 7)
			if right {
				g.peer.Send(g.frame(64, 1))
				if st, _ := nw.wb(0); st&intelnic.RxStatusDD == 0 {
					t.Fatal("frame not in the new ring")
				}
				return
			}
			if got := uint64(g.rd(g.rxq(0, intelnic.QBAL))) | uint64(g.rd(g.rxq(0, intelnic.QBAH)))<<32; got != oldBase {
				t.Fatalf("RDBAL/RDBAH %#x: written while the queue was still on, want the latched %#x", got, oldBase)
			}
			wantFault(t, g, "while the queue is enabled")
		}},
		{"82576 queue 0 is enabled at reset", func(right bool) Config {
			return Config{Flavor: X82576}
		}, func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			if g.rd(g.rxq(0, intelnic.QDCTL))&intelnic.DctlEnable == 0 || g.rd(g.txq(0, intelnic.QDCTL))&intelnic.DctlEnable == 0 {
				t.Fatal("82576 RX/TX queue 0 not enabled after reset")
			}
			if right {
				g.setupRX(0, 8, 2048, true) // disables and waits first
				g.peer.Send(g.frame(64, 1))
				if st, _ := g.rx[0].wb(0); st&intelnic.RxStatusDD == 0 {
					t.Fatal("frame not received")
				}
				return
			}
			g.programRX(0, 8, 2048, true) // programmed without disabling
			if g.rd(g.rxq(0, intelnic.QBAL)) != 0 {
				t.Fatal("RDBAL(0) took a write while queue 0 was on")
			}
			wantFault(t, g, "while the queue is enabled")
		}},
		{"82599 TX DMA before TX queues", func(right bool) Config {
			return Config{}
		}, func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			g.wr(i82599.DMATXCTL, 0)
			if right {
				g.wr(i82599.DMATXCTL, 1)
			}
			g.setBits(g.txq(0, intelnic.QDCTL), intelnic.DctlEnable)
			if right {
				g.waitSet(g.txq(0, intelnic.QDCTL), intelnic.DctlEnable)
				return
			}
			wantFault(t, g, "enabled before DMATXCTL.TE")
		}},
		{"filter tables survive a reset", func(right bool) Config {
			return Config{}
		}, func(t *testing.T, g *rig, right bool) {
			g.initDevice() // CTRL.RST: MTA keeps its power-on content
			g.clearBits(i82599.FCTRL, i82599.FctrlUPE|i82599.FctrlMPE)
			g.wr(i82599.MCSTCTRL, 1<<2) // MFE, MO 0: hash bits 47:36
			if right {
				for i := uint32(0); i < 128; i++ {
					g.wr(intelnic.MTA+4*i, 0)
				}
			}
			rx := g.setupRX(0, 8, 2048, true)
			f := g.frame(64, 1)
			copy(f, []byte{0x01, 0x00, 0x5e, 0x00, 0x10, 0x00}) // hash 1: bit 1 of MTA[0]
			g.peer.Send(f)
			st, _ := rx.wb(0)
			if received := st&intelnic.RxStatusDD != 0; received == right {
				t.Fatalf("multicast frame for a group nobody joined received: %v (MTA cleared: %v)", received, right)
			}
		}},
		{"82599 RX enable with the security path halted", timings(Timing{SecRxReady: 5 * time.Millisecond}, Timing{SecRxReady: long}), func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			g.setBits(i82599.SECRXCTRL, i82599.SecrxctrlRxDis)
			if right {
				g.waitSet(0x08D04, 1) // SECRXSTAT.SECRX_RDY, as Linux waits up to 40 ms
			} else {
				time.Sleep(300 * time.Microsecond) // a fixed 300 µs wait instead of polling
			}
			g.setBits(i82599.RXCTRL, 1)
			g.clearBits(i82599.SECRXCTRL, i82599.SecrxctrlRxDis)
			if !right {
				wantFault(t, g, "security RX path is not halted")
			}
		}},
		{"link mode must suit the media", func(right bool) Config {
			return Config{DeviceID: i82599.DeviceKX4, Timing: Timing{Autoneg: time.Millisecond}}
		}, func(t *testing.T, g *rig, right bool) {
			g.noLinkWait = true
			g.initDevice()
			if right {
				g.waitSet(i82599.LINKS, i82599.LinksUp) // the EEPROM's KX4/KX/KR mode kept
				return
			}
			// Forcing 10G serial (SFI) on a backplane port: no link, ever.
			g.wr(i82599.AUTOC, g.rd(i82599.AUTOC)&^i82599.AutocLMSMask|i82599.LMS10GSerial<<i82599.AutocLMSShift)
			g.setBits(i82599.AUTOC, i82599.AutocAnRestart)
			time.Sleep(20 * time.Millisecond)
			if g.rd(i82599.LINKS)&i82599.LinksUp != 0 || g.m.Link() {
				t.Fatal("link up with 10G serial on a KX4 port")
			}
		}},
		{"link comes up after auto-negotiation", timings(Timing{Autoneg: 5 * time.Millisecond}, Timing{Autoneg: long}), func(t *testing.T, g *rig, right bool) {
			g.noLinkWait = true
			g.initDevice()
			if right {
				g.waitSet(i82599.LINKS, i82599.LinksUp)
			}
			tx := g.setupTX(0, 8, 2048)
			tx.fillTX(0, g.frame(64, 1), txCmd)
			g.wr(g.txq(0, intelnic.QT), 1)
			got := len(g.received())
			if right != (got == 1) || !right && g.m.Stats().TxLinkDown != 1 {
				t.Fatalf("%d frames on the wire (waited for link: %v), stats %+v", got, right, g.m.Stats())
			}
		}},
		{"a TX frame needs 17 bytes", func(right bool) Config {
			return Config{}
		}, func(t *testing.T, g *rig, right bool) {
			g.initDevice()
			g.clearBits(i82599.HLREG0, i82599.Hlreg0TxPadEn) // the MAC pads to 60 only when asked; a runt is a runt
			tx := g.setupTX(0, 8, 2048)
			f := g.frame(60, 1)[:16]
			if right {
				f = append(f, make([]byte, 60-16)...) // the driver pads
			}
			tx.fillTX(0, f, txCmd)
			g.wr(g.txq(0, intelnic.QT), 1)
			got := g.received()
			if right {
				if len(got) != 1 || len(got[0]) != 60 {
					t.Fatalf("padded frame: %d frames on the wire", len(got))
				}
				return
			}
			if len(got) != 0 || g.m.Stats().TxRunts != 1 {
				t.Fatalf("16-byte frame: %d on the wire, %d runts counted", len(got), g.m.Stats().TxRunts)
			}
			wantFault(t, g, "the MAC needs at least 17 bytes")
		}},
	}
	for _, tt := range tests {
		for _, right := range []bool{false, true} {
			name := tt.name + "/wrong"
			if right {
				name = tt.name + "/right"
			}
			t.Run(name, func(t *testing.T) {
				g := newRig(t, tt.cfg(right))
				g.allowFaults = !right
				tt.run(t, g, right)
			})
		}
	}
}
