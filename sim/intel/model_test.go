package intel

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

func TestInitRegisters(t *testing.T) {
	g := newRig(t, Config{})
	// Registers a driver set before the reset return to their reset values.
	g.wr(g.m.l.gpie, intelnic.GpieMSIXMode)
	g.wr(g.rxq(0, intelnic.QLEN), 1024)
	g.initDevice()
	tests := []struct {
		name      string
		off, mask uint32
		want      uint32
	}{
		{"CTRL reset bits self-clear", intelnic.CTRL, intelnic.CtrlReset | intelnic.CtrlLinkReset, 0},
		{"EEC auto-read done", i82599.EEC, intelnic.EecAutoRead | intelnic.EecPresent, intelnic.EecAutoRead | intelnic.EecPresent},
		{"RDRXCTL DMA init done", i82599.RDRXCTL, i82599.RdrxctlDMAIDone, i82599.RdrxctlDMAIDone},
		{"LINKS up at 10G", i82599.LINKS, i82599.LinksUp | i82599.LinksSpeed10G, i82599.LinksUp | i82599.LinksSpeed10G},
		{"STATUS GIO master enabled", intelnic.STATUS, intelnic.StatusGIOMaster, intelnic.StatusGIOMaster},
		{"GPIE reset", g.m.l.gpie, ^uint32(0), 0},
		{"RDLEN reset", g.rxq(0, intelnic.QLEN), ^uint32(0), 0},
		{"RAL0 holds the MAC", g.m.l.ral(0), ^uint32(0), 0x01000002},
		{"RAH0 holds the MAC and AV", g.m.l.rah(0), ^uint32(0), intelnic.RahAV | 0x0100},
		{"RAL0 at its 82598 alias", 0x5400, ^uint32(0), 0x01000002},
		{"TXDCTL enable reads back", g.txq(0, intelnic.QDCTL), intelnic.DctlEnable, 0},
		{"DMATXCTL TE", i82599.DMATXCTL, 1, 1},
		{"MAXFRS reset", i82599.MAXFRS, 0xFFFF0000, 1518 << 16},
	}
	for _, tt := range tests {
		if got := g.rd(tt.off) & tt.mask; got != tt.want {
			t.Errorf("%s: 0x%05x & 0x%x = 0x%x, want 0x%x", tt.name, tt.off, tt.mask, got, tt.want)
		}
	}
	// The RDRXCTL DMA-init bit is read-only; AUTOC restart self-clears.
	g.wr(i82599.RDRXCTL, 0)
	if g.rd(i82599.RDRXCTL)&i82599.RdrxctlDMAIDone == 0 {
		t.Error("RDRXCTL.DMAIDONE writable")
	}
	if g.rd(i82599.AUTOC)&i82599.AutocAnRestart != 0 {
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
	if got := g.rd(g.m.l.eics); got != 0x5|i82599.EicrLSC { // LSC from the link coming up
		t.Errorf("EICS read = %x, want the causes", got)
	}
	if got := g.rd(g.m.l.eicr); got != 0x5|i82599.EicrLSC {
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
	g.waitSet(i82599.LINKS, i82599.LinksUp)
	if st := g.m.Stats(); st.LinkChanges == 0 {
		t.Fatal("no link change counted")
	}
}

func TestBusMasterOff(t *testing.T) {
	g := newReadyRig(t)
	rx := g.setupRX(0, 16, 2048, true)
	tx := g.setupTX(0, 16, 2048)
	pci.SetBusMaster(g.dev.Config(), false)
	g.peer.Send(g.frame(64, 0))
	tx.fillTX(0, g.frame(64, 0), txCmd)
	g.wr(g.txq(0, intelnic.QT), 1)
	if st, _ := rx.wb(0); st != 0 || len(g.received()) != 0 {
		t.Fatal("DMA without bus mastering")
	}
	if st := g.m.Stats(); st.NoBusMaster != 2 {
		t.Fatalf("NoBusMaster %d", st.NoBusMaster)
	}
	if g.rd(intelnic.STATUS)&intelnic.StatusGIOMaster != 0 {
		t.Fatal("STATUS.GIO master enabled without bus mastering")
	}
}

func TestFaultInjection(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		g := newReadyRig(t)
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
		g := newReadyRig(t)
		rx := g.setupRX(0, 16, 2048, true)
		g.m.StallRX(true)
		g.peer.Send(g.frame(64, 0))
		if st, _ := rx.wb(0); st != 0 {
			t.Fatal("stalled RX wrote back")
		}
		g.m.StallRX(false)
		if st, _ := rx.wb(0); st&intelnic.RxStatusDD == 0 {
			t.Fatal("resumed RX did not place the frame")
		}
	})
	t.Run("oversize", func(t *testing.T) {
		g := newReadyRig(t)
		rx := g.setupRX(0, 16, 2048, true)
		g.m.OversizeNext(1)
		g.peer.Send(g.frame(64, 0))
		if _, l := rx.wb(0); l <= 2048 {
			t.Fatalf("length %d not beyond the buffer", l)
		}
	})
	t.Run("unposted-dd", func(t *testing.T) {
		g := newReadyRig(t)
		rx := g.setupRX(0, 16, 2048, true)
		if err := g.m.WriteUnpostedDD(0); err != nil {
			t.Fatal(err)
		}
		if st, _ := rx.wb(15); st&intelnic.RxStatusDD == 0 || g.rd(g.rxq(0, intelnic.QH)) != 0 {
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
		g := newReadyRig(t)
		vs := g.setupMSIX(true)
		g.m.SpuriousInterrupt(0)
		g.m.InterruptStorm(0, 100)
		if n := testutil.Drain(t, vs[0]); n != 101 {
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
		g.wr(g.txq(0, intelnic.QT), 1)
		if len(g.received()) != 0 || g.dev.Err() == nil {
			t.Fatal("IOMMU did not catch a wrong bus address")
		}
	})
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
	var out wire.Recorder
	b2.SetHandler(out.Handle)
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
	binary.LittleEndian.PutUint32(d[8:], uint32(l)|intelnic.TxdTypeData<<20|txCmd)
	gb.wr(gb.txq(0, intelnic.QT), 1)
	if got := out.Take(); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatal("zero-copy forward failed")
	}
	if ma.Device().Err() != nil || mb.Device().Err() != nil {
		t.Fatal(ma.Device().Err(), mb.Device().Err())
	}
}

func TestCloseStopsModel(t *testing.T) {
	g := newReadyRig(t)
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
			g.setBits(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			g.waitSet(g.rxq(0, intelnic.QDCTL), intelnic.DctlEnable)
			g.enableRX()
			g.peer.Send(g.frame(64, 0))
		}},
		{"rx buffer size zero", func(g *rig) {
			g.setupRX(0, 8, 2048, true)
			g.wr(g.m.l.srrctl(0), intelnic.SrrctlDescAdvOneBuf)
			g.peer.Send(g.frame(64, 0))
		}},
		{"tx tail beyond the ring", func(g *rig) {
			g.setupTX(0, 8, 2048)
			g.wr(g.txq(0, intelnic.QT), 9)
		}},
		{"tx unknown descriptor type", func(g *rig) {
			tx := g.setupTX(0, 8, 2048)
			tx.fillTX(0, g.frame(64, 0), txCmd)
			d := tx.desc.Bytes[8:]
			binary.LittleEndian.PutUint32(d, binary.LittleEndian.Uint32(d)&^(0xF<<20)|7<<20)
			g.wr(g.txq(0, intelnic.QT), 1)
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

func TestFunctionLevelReset(t *testing.T) {
	g := newReadyRig(t)
	g.wr(g.m.l.gpie, intelnic.GpieMSIXMode)
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

func TestIGBPHYAndICRWrite(t *testing.T) {
	g := newRig(t, Config{Flavor: X82576})
	g.initDevice()
	g.mdicWrite(i82576.PHYANAR, 0x0DE1)
	if g.mdicRead(i82576.PHYANAR) != 0x0DE1 || g.mdicRead(i82576.PHYGSR) == 0 || g.mdicRead(i82576.PHYANLPAR) == 0 {
		t.Fatal("PHY registers")
	}
	g.wr(i82576.MDIC, 1<<16|2<<21|i82576.MdicOpRead) // PHY address 2 does not exist
	if g.rd(i82576.MDIC)&(i82576.MdicReady|i82576.MdicError) != i82576.MdicReady|i82576.MdicError {
		t.Fatal("MDIC to a missing PHY did not report an error")
	}
	g.m.SetLink(false)
	if g.mdicRead(i82576.PHYBMSR)&i82576.BmsrLinkUp != 0 || g.rd(intelnic.STATUS)&i82576.StatusLU != 0 {
		t.Fatal("link down not visible in BMSR and STATUS")
	}
	g.wr(i82576.ICS, i82576.IcrLSC|i82576.IcrRXDW)
	g.wr(i82576.ICR, i82576.IcrLSC) // write 1 to clear
	if g.m.ic.misc != i82576.IcrRXDW {
		t.Fatalf("ICR after W1C = %#x", g.m.ic.misc)
	}
}
