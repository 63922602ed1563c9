package intel

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// rig is a hand-written minimal "driver" poking the model's registers directly.
type rig struct {
	t    testing.TB
	m    *Model
	dev  *sim.Device
	r    pci.Region
	peer wire.Port

	frames wire.Recorder // what the peer received

	rx [4]ring
	tx [4]ring

	allowFaults bool
	noLinkWait  bool // initDevice does not wait for link-up
}

type ring struct {
	n     int
	desc  pci.Mem
	bufs  pci.Mem
	bsize int
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	return newRigTB(t, cfg)
}

// newReadyRig is a rig on the default 82599 model, initialised (initDevice), for tests
// and benchmarks.
func newReadyRig(tb testing.TB) *rig {
	tb.Helper()
	g := newRigTB(tb, Config{})
	g.initDevice()
	return g
}

func newRigTB(tb testing.TB, cfg Config) *rig {
	tb.Helper()
	a, b := wire.Pair()
	cfg.Wire = a
	cfg.Addr = pci.MustParseAddr("0000:01:00.0")
	cfg.Strict = true
	m, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	g := &rig{t: tb, m: m, dev: m.Device(), peer: b}
	g.r, err = g.dev.Region(0)
	if err != nil {
		tb.Fatal(err)
	}
	b.SetHandler(g.frames.Handle)
	if err := pci.SetBusMaster(g.dev.Config(), true); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		m.Close()
		if err := g.dev.Err(); err != nil && !g.allowFaults {
			tb.Errorf("model faults: %v", err)
		}
	})
	return g
}

// intx enables the device's legacy INTx vector and returns it.
func (g *rig) intx(t *testing.T) *irq.Vector {
	t.Helper()
	vs, err := g.dev.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return vs[0]
}

// newLegacyRig returns an initialised 82599 in legacy INTx mode, its one vector, and RX
// queue 0 set up with n descriptors and routed to EICR bit 0.
func newLegacyRig(t *testing.T, n int) (*rig, *irq.Vector) {
	t.Helper()
	g := newReadyRig(t)
	v := g.intx(t)
	g.wr(g.m.l.ivar0, 0x80) // RX queue 0 → EICR bit 0
	g.setupRX(0, n, 2048, true)
	return g, v
}

func (g *rig) rd(off uint32) uint32       { return g.r.Read32(off) }
func (g *rig) wr(off, v uint32)           { g.r.Write32(off, v) }
func (g *rig) setBits(off, v uint32)      { g.wr(off, g.rd(off)|v) }
func (g *rig) clearBits(off, v uint32)    { g.wr(off, g.rd(off)&^v) }
func (g *rig) rxq(q int, r uint32) uint32 { return g.m.l.rxq(q, r) }
func (g *rig) txq(q int, r uint32) uint32 { return g.m.l.txq(q, r) }

// waitSet polls until the bits are set, as a driver's bounded wait does.
func (g *rig) waitSet(off, bits uint32) {
	g.t.Helper()
	for i := 0; i < 2000; i++ {
		if g.rd(off)&bits == bits {
			return
		}
		time.Sleep(time.Duration(min(i, 1000)) * time.Microsecond)
	}
	g.t.Fatalf("register 0x%x: bits 0x%x never set", off, bits)
}

// waitClear polls until the bits are clear.
func (g *rig) waitClear(off, bits uint32) {
	g.t.Helper()
	for i := 0; i < 2000; i++ {
		if g.rd(off)&bits == 0 {
			return
		}
		time.Sleep(time.Duration(min(i, 1000)) * time.Microsecond)
	}
	g.t.Fatalf("register 0x%x: bits 0x%x never clear", off, bits)
}

// initDevice runs the 82599 datasheet init: mask, reset, wait for EEPROM and DMA init,
// link setup, statistics cleared, RX and TX global setup.
func (g *rig) initDevice() {
	g.t.Helper()
	if g.m.cfg.Flavor == X82576 {
		g.init82576()
		return
	}
	g.wr(g.m.l.eimc, 0x7FFFFFFF)
	g.wr(intelnic.CTRL, intelnic.CtrlReset|intelnic.CtrlLinkReset)
	g.waitClear(intelnic.CTRL, intelnic.CtrlReset|intelnic.CtrlLinkReset)
	g.wr(g.m.l.eimc, 0x7FFFFFFF)
	g.waitSet(i82599.EEC, intelnic.EecAutoRead)
	g.waitSet(i82599.RDRXCTL, i82599.RdrxctlDMAIDone)
	g.setBits(i82599.AUTOC, i82599.AutocAnRestart) // keep the EEPROM's link mode
	for _, off := range []uint32{intelnic.GPRC, intelnic.GPTC, intelnic.GORCL, intelnic.GORCH, intelnic.GOTCL, intelnic.GOTCH} {
		g.rd(off)
	}
	g.clearBits(i82599.RXCTRL, 1)
	g.setBits(i82599.HLREG0, i82599.Hlreg0RxCRCStrp|i82599.Hlreg0TxCRCEn|i82599.Hlreg0TxPadEn)
	g.setBits(i82599.RDRXCTL, 2)
	g.setBits(i82599.FCTRL, i82599.FctrlBAM|i82599.FctrlUPE|i82599.FctrlMPE)
	g.setBits(intelnic.CTRLEXT, 1<<16)
	g.wr(i82599.DMATXCTL, 1)
	if g.m.cfg.Wire != nil && !g.noLinkWait {
		g.waitSet(i82599.LINKS, i82599.LinksUp)
	}
}

// disableQueue turns a queue off and waits until it is (the 82576's queue 0 is on after
// reset).
func (g *rig) disableQueue(off uint32) {
	g.t.Helper()
	g.clearBits(off, intelnic.DctlEnable)
	g.waitClear(off, intelnic.DctlEnable)
}

// setupRX allocates and posts an RX ring of n descriptors with bsize-byte buffers on
// queue q, and enables the queue and the receiver.
func (g *rig) setupRX(q, n, bsize int, dropEn bool) *ring {
	g.t.Helper()
	g.disableQueue(g.rxq(q, intelnic.QDCTL))
	rg := g.programRX(q, n, bsize, dropEn)
	g.setBits(g.rxq(q, intelnic.QDCTL), intelnic.DctlEnable)
	g.waitSet(g.rxq(q, intelnic.QDCTL), intelnic.DctlEnable)
	g.wr(g.rxq(q, intelnic.QT), uint32(n-1))
	if g.m.cfg.Flavor == X82576 {
		g.setBits(i82576.RCTL, i82576.RctlEN)
	} else {
		g.enableRX()
	}
	return rg
}

// enableRX sets the 82599's RXCTRL.RXEN with the security RX path halted around it, as
// the silicon erratum requires (Linux ixgbe_enable_rx_dma_82599).
func (g *rig) enableRX() {
	g.t.Helper()
	if g.rd(i82599.RXCTRL)&1 != 0 {
		return
	}
	g.setBits(i82599.SECRXCTRL, i82599.SecrxctrlRxDis)
	g.waitSet(0x08D04, 1) // SECRXSTAT.SECRX_RDY
	g.setBits(i82599.RXCTRL, 1)
	g.clearBits(i82599.SECRXCTRL, i82599.SecrxctrlRxDis)
}

// programRX allocates an RX ring of n descriptors with bsize-byte buffers, posts them
// and writes queue q's SRRCTL, base, length, head and tail 0 (the queue must be off).
func (g *rig) programRX(q, n, bsize int, dropEn bool) *ring {
	g.t.Helper()
	rg := &g.rx[q]
	*rg = g.allocRing(n, bsize)
	desc := rg.desc
	for i := 0; i < n; i++ {
		rg.post(i)
	}
	srr := uint32(intelnic.SrrctlDescAdvOneBuf | bsize/1024)
	if dropEn {
		srr |= g.m.l.srrctlDropEn
	}
	g.wr(g.m.l.srrctl(q), srr)
	g.wr(g.rxq(q, intelnic.QBAL), uint32(desc.IOVA))
	g.wr(g.rxq(q, intelnic.QBAH), uint32(desc.IOVA>>32))
	g.wr(g.rxq(q, intelnic.QLEN), uint32(16*n))
	g.wr(g.rxq(q, intelnic.QH), 0)
	g.wr(g.rxq(q, intelnic.QT), 0)
	return rg
}

// allocRing allocates the DMA memory of a ring of n descriptors with bsize-byte buffers.
func (g *rig) allocRing(n, bsize int) ring {
	g.t.Helper()
	dma := g.dev.DMA()
	desc, err := dma.Alloc(16 * n)
	if err != nil {
		g.t.Fatal(err)
	}
	bufs, err := dma.Alloc(bsize * n)
	if err != nil {
		g.t.Fatal(err)
	}
	return ring{n: n, desc: desc, bufs: bufs, bsize: bsize}
}

// post gives descriptor i (with its own buffer) to the device.
func (rg *ring) post(i int) {
	d := rg.desc.Bytes[16*i:]
	binary.LittleEndian.PutUint64(d, rg.bufs.IOVA+uint64(i*rg.bsize))
	binary.LittleEndian.PutUint64(d[8:], 0)
}

// wb reads descriptor i's write-back: status (atomically, first) then length.
func (rg *ring) wb(i int) (status uint32, length int) {
	d := rg.desc.Bytes[16*i:]
	status = sim.LoadUint32(d[8:])
	if status&intelnic.RxStatusDD == 0 {
		return status, 0 // the length is not ours to read yet
	}
	return status, int(binary.LittleEndian.Uint16(d[12:]))
}

func (rg *ring) buf(i int) []byte { return rg.bufs.Bytes[i*rg.bsize : (i+1)*rg.bsize] }

// setupTX allocates a TX ring of n descriptors with bsize-byte buffers on queue q and
// enables it.
func (g *rig) setupTX(q, n, bsize int) *ring {
	g.t.Helper()
	rg := &g.tx[q]
	*rg = g.allocRing(n, bsize)
	desc := rg.desc
	g.disableQueue(g.txq(q, intelnic.QDCTL))
	g.wr(g.txq(q, intelnic.QBAL), uint32(desc.IOVA))
	g.wr(g.txq(q, intelnic.QBAH), uint32(desc.IOVA>>32))
	g.wr(g.txq(q, intelnic.QLEN), uint32(16*n))
	g.wr(g.txq(q, intelnic.QH), 0)
	g.wr(g.txq(q, intelnic.QT), 0)
	g.setBits(g.txq(q, intelnic.QDCTL), intelnic.DctlEnable)
	g.waitSet(g.txq(q, intelnic.QDCTL), intelnic.DctlEnable)
	return rg
}

// fillTX writes frame into TX descriptor i as one advanced data descriptor.
func (rg *ring) fillTX(i int, frame []byte, cmd uint32) {
	copy(rg.buf(i), frame)
	d := rg.desc.Bytes[16*i:]
	binary.LittleEndian.PutUint64(d, rg.bufs.IOVA+uint64(i*rg.bsize))
	binary.LittleEndian.PutUint32(d[8:], uint32(len(frame))|intelnic.TxdTypeData<<20|cmd)
	binary.LittleEndian.PutUint32(d[12:], uint32(len(frame))<<14)
}

const txCmd = intelnic.TxdDEXT | intelnic.TxdRS | intelnic.TxdIFCS | intelnic.TxdEOP

// received returns and forgets the frames the peer got.
func (g *rig) received() [][]byte { return g.frames.Take() }

// frame returns an n-byte unicast frame to the model's MAC with a recognisable payload.
func (g *rig) frame(n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, g.m.cfg.MAC)
	copy(f[6:], []byte{0x02, 0xaa, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x88b5)
	for i := 14; i < n; i++ {
		f[i] = seed + byte(i)
	}
	return f
}

// mdicRead reads a PHY register through MDIC, waiting for READY.
func (g *rig) mdicRead(reg uint32) uint16 {
	g.t.Helper()
	g.wr(i82576.MDIC, reg<<16|1<<21|i82576.MdicOpRead)
	g.waitSet(i82576.MDIC, i82576.MdicReady)
	v := g.rd(i82576.MDIC)
	if v&i82576.MdicError != 0 {
		g.t.Fatalf("MDIC read of PHY register %d failed", reg)
	}
	return uint16(v)
}

func (g *rig) mdicWrite(reg uint32, v uint16) {
	g.t.Helper()
	g.wr(i82576.MDIC, uint32(v)|reg<<16|1<<21|i82576.MdicOpWrite)
	g.waitSet(i82576.MDIC, i82576.MdicReady)
}

// init82576 is the igb init: mask, reset, EEPROM auto-read, PHY auto-negotiation through
// MDIC, link wait, RX and TX global setup.
func (g *rig) init82576() {
	g.t.Helper()
	g.wr(i82576.IMC, ^uint32(0))
	g.wr(g.m.l.eimc, ^uint32(0))
	g.wr(intelnic.CTRL, intelnic.CtrlReset)
	g.waitClear(intelnic.CTRL, intelnic.CtrlReset)
	g.wr(i82576.IMC, ^uint32(0))
	g.rd(i82576.ICR)
	g.waitSet(i82576.EECD, intelnic.EecAutoRead)
	g.mdicWrite(i82576.PHYBMCR, g.mdicRead(i82576.PHYBMCR)|i82576.BmcrANEnable|i82576.BmcrANRestart)
	for i := 0; !g.noLinkWait && g.mdicRead(i82576.PHYBMSR)&i82576.BmsrANDone == 0; i++ {
		if i > 1000 {
			g.t.Fatal("auto-negotiation never completed")
		}
		time.Sleep(time.Millisecond)
	}
	if !g.noLinkWait {
		g.waitSet(intelnic.STATUS, i82576.StatusLU)
	}
	for _, off := range []uint32{intelnic.GPRC, intelnic.GPTC, intelnic.GORCL, intelnic.GORCH, intelnic.GOTCL, intelnic.GOTCH} {
		g.rd(off)
	}
	g.wr(i82576.RCTL, i82576.RctlBAM|i82576.RctlUPE|i82576.RctlMPE|i82576.RctlSECRC)
	g.wr(i82576.TCTL, i82576.TctlEN|i82576.TctlPSP)
}

// steerTo sends every IPv4 frame to RX queue q by RSS (RETA all q).
func (g *rig) steerTo(q int) {
	g.t.Helper()
	for i := 0; i < 32; i++ {
		g.wr(g.m.l.reta+4*uint32(i), uint32(q)*0x01010101)
	}
	g.wr(intelnic.RXCSUM, intelnic.RxcsumPCSD)
	mrqc := uint32(1) // 82599: RSS
	if g.m.cfg.Flavor == X82576 {
		mrqc = 2 // 82576: RSS, no VMDq
	}
	g.wr(g.m.l.mrqc, mrqc|intelnic.MrqcIPv4)
}
