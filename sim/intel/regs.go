package intel

import (
	"net"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// dcaTxctlReset is DCA_TXCTRL at reset on both parts: relaxed ordering on for descriptor
// reads (bit 9), descriptor write-backs (bit 11) and data reads (bit 13). A driver that
// relies on write-backs arriving in order clears bit 11, as DPDK does.
const dcaTxctlReset = 1<<9 | 1<<11 | 1<<13

// stat returns read-to-clear statistics counters.
func stat(name string, off uint32, n int, stride uint32) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: stride, Access: sim.RO, ReadClear: true}
}

// tableGarbage is what the multicast, VLAN and unicast hash tables hold at power-on: the
// datasheets define no reset value for them and a reset leaves them alone (Linux clears
// them in ixgbe_init_rx_addrs_generic / igb's e1000_clear_vfta), so a driver that does
// not clear them sees stray filter hits.
const tableGarbage = 0x5A5A5A5A

// StaleAddress is what receive addresses 1 and up hold at power-on, marked valid: a
// previous owner's filter (Linux programs macvlan and VF addresses there), which no reset
// undoes. A driver that does not clear them receives frames for it.
var StaleAddress = net.HardwareAddr{0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a}

// staleRAL and staleRAH are StaleAddress as a valid receive address entry.
const (
	staleRAL = 0x5a5a5a5a
	staleRAH = intelnic.RahAV | 0x5a5a
)

// table returns registers of a filter table the driver must clear.
func table(name string, off uint32, n int) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: 4, Access: sim.RW, Reset: tableGarbage, Sticky: true}
}

// rw returns plain read/write registers.
func rw(name string, off uint32, n int, stride uint32, reset uint32) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: stride, Access: sim.RW, Reset: reset}
}

// readEEC grants the EEPROM to software as soon as it requests it (EEC / EECD EE_REQ).
func readEEC(_ int, v uint32) uint32 {
	if v&intelnic.EecReq != 0 {
		v |= intelnic.EecGnt
	}
	return v
}

// sharedRegs returns the registers both flavours have with the same behaviour, at the
// same offset or at the layout's: STATUS, CTRL_EXT, the extended interrupt registers, the
// RX filter and RSS tables, the queue ring registers and the common statistics.
func (m *Model) sharedRegs() []sim.Reg {
	l, nq := m.l, m.l.queues
	regs := []sim.Reg{
		{Name: "STATUS", Off: intelnic.STATUS, Access: sim.RO, Read: m.readSTATUS},
		{Name: "CTRL_EXT", Off: intelnic.CTRLEXT, Access: sim.RW, Reset: m.ctrlExtReset(), Write: m.writeLinkReg},

		{Name: "EICR", Off: l.eicr, Access: sim.RO, Read: m.readEICR, Write: m.writeEICR},
		{Name: "EICS", Off: l.eics, Access: sim.WO, Read: m.readEICS, Write: m.writeEICS},
		{Name: "EIMS", Off: l.eims, Access: sim.RO, Read: m.readEIMS, Write: m.writeEIMS},
		{Name: "EIMC", Off: l.eimc, Access: sim.WO, Write: m.writeEIMC},
		rw("EIAC", l.eiac, 1, 0, 0),
		rw("EIAM", l.eiam, 1, 0, 0),

		rw("RXCSUM", intelnic.RXCSUM, 1, 0, 0),
		rw("RFCTL", 0x05008, 1, 0, 0),
		table("MTA", intelnic.MTA, 128),
		rw("RAL", l.ralBase, 1, 0, 0),
		rw("RAH", l.ralBase+4, 1, 0, 0),
		{Name: "RAL", Off: l.ral(1), N: l.rarEntries - 1, Stride: 8, Access: sim.RW, Reset: staleRAL, Sticky: true},
		{Name: "RAH", Off: l.rah(1), N: l.rarEntries - 1, Stride: 8, Access: sim.RW, Reset: staleRAH, Sticky: true},
		rw("MRQC", l.mrqc, 1, 0, 0),
		rw("RETA", l.reta, 32, 4, 0),
		rw("RSSRK", l.rssrk, 10, 4, 0),
		rw("TDWBAL", l.txq(0, intelnic.QWBAL), nq, intelnic.QStride, 0),
		rw("TDWBAH", l.txq(0, intelnic.QWBAH), nq, intelnic.QStride, 0),

		stat("CRCERRS", intelnic.CRCERRS, 1, 0),
		stat("RLEC", intelnic.RLEC, 1, 0),
		stat("PRC64..PRC1522", intelnic.PRC64, 6, 4),
		stat("GPRC", intelnic.GPRC, 1, 0),
		stat("BPRC", intelnic.BPRC, 1, 0),
		stat("MPRC", intelnic.MPRC, 1, 0),
		stat("GPTC", intelnic.GPTC, 1, 0),
		stat("GORCL", intelnic.GORCL, 1, 0),
		stat("GORCH", intelnic.GORCH, 1, 0),
		stat("GOTCL", intelnic.GOTCL, 1, 0),
		stat("GOTCH", intelnic.GOTCH, 1, 0),
		stat("RUC", intelnic.RUC, 1, 0),
		stat("RFC", intelnic.RFC, 1, 0),
		stat("ROC", intelnic.ROC, 1, 0),
		stat("RJC", intelnic.RJC, 1, 0),
		stat("PTC64..PTC1522", intelnic.PTC64, 6, 4),
		stat("MPTC", intelnic.MPTC, 1, 0),
		stat("BPTC", intelnic.BPTC, 1, 0),
	}
	regs = append(regs, m.ringRegs(false)...)
	return append(regs, m.ringRegs(true)...)
}

// ringRegs are a direction's queue ring registers: RDBAL/TDBAL, RDBAH/TDBAH, RDLEN/TDLEN,
// RDH/TDH, RDT/TDT, RXDCTL/TXDCTL and (RX) SRRCTL. The ring's base, length and SRRCTL
// (and the head) are latched at enable; the tail counts only once the queue is on;
// ENABLE completes asynchronously.
func (m *Model) ringRegs(tx bool) []sim.Reg {
	l, nq := m.l, m.l.queues
	at, dir := l.rxq, "RD"
	tail := sim.Reg{Write: m.writeRDT}
	if tx {
		at, dir = l.txq, "TD"
		tail = sim.Reg{Write: m.writeTDT, Doorbell: m.doorbellTDT}
	}
	reg := func(name string, off uint32, mask uint32) sim.Reg {
		return sim.Reg{Name: name, Off: at(0, off), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: mask}
	}
	latched := func(name string, off, mask uint32) sim.Reg {
		r := reg(dir+name, off, mask)
		r.Write = m.latchedReg(tx, r.Name, func(q int) uint32 { return at(q, off) })
		return r
	}
	t := reg(dir+"T", intelnic.QT, 0xFFFF)
	t.Write, t.Doorbell = tail.Write, tail.Doorbell
	dctl := reg(dir[:1]+"XDCTL", intelnic.QDCTL, 0)
	dctl.Write = func(q int, old, v uint32) { m.writeDCTL(tx, q, old, v) }
	regs := []sim.Reg{
		latched("BAL", intelnic.QBAL, 0xFFFFFF80),
		latched("BAH", intelnic.QBAH, 0),
		latched("LEN", intelnic.QLEN, 0x000FFF80),
		latched("H", intelnic.QH, 0xFFFF),
		t, dctl,
	}
	if !tx {
		srrctl := sim.Reg{Name: "SRRCTL", Off: l.srrctl(0), N: nq, Stride: intelnic.QStride, Access: sim.RW, Reset: 0x402}
		srrctl.Write = m.latchedReg(false, "SRRCTL", l.srrctl)
		regs = append(regs, srrctl)
	}
	return regs
}

// registers returns the flavour's register table.
func (m *Model) registers() []sim.Reg {
	if m.cfg.Flavor == X82576 {
		return m.registers82576()
	}
	return m.registers82599()
}

// alias returns registers that read and write instances of another register (the 82599
// keeps queue 0-15 copies of some per-queue registers at their 82598 offsets).
func (m *Model) alias(name string, off uint32, n int, stride uint32, target func(i int) uint32) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: stride, Access: sim.RW,
		Read: func(i int, _ uint32) uint32 { return m.get(target(i)) },
		Write: func(i int, _, v uint32) {
			m.set(target(i), v)
		},
	}
}

// writeCTRL handles the global reset bits: RST resets the whole device (the driver must
// wait for the bit to read back clear), LNK_RST restarts the link.
func (m *Model) writeCTRL(_ int, _, v uint32) {
	switch {
	case v&intelnic.CtrlReset != 0:
		m.st.Resets++
		m.swReset = true
		m.dev.ResetRegisters()
	case m.cfg.Flavor == X82599 && v&intelnic.CtrlLinkReset != 0:
		m.link.reset(m)
	case m.cfg.Flavor == X82576 && v&i82576.CtrlPHYRST != 0:
		m.phy.reset() // the PHY's registers to their defaults (it stays powered down)
		m.link.reset(m)
	default:
		m.updateLink() // CTRL.SLU (SerDes)
	}
}

// writeEERD performs an EEPROM word read: the word appears in bits 31:16 with DONE.
func (m *Model) writeEERD(_ int, _, v uint32) {
	if v&intelnic.EerdStart == 0 {
		return
	}
	addr := v >> 2 & 0x3FFF
	var word uint32
	if int(addr) < len(m.eeprom) {
		word = uint32(m.eeprom[addr])
	}
	off := uint32(i82599.EERD)
	if m.cfg.Flavor == X82576 {
		off = i82576.EERD
	}
	m.set(off, word<<16|addr<<2|intelnic.EerdDone)
}

// readSWSM implements the software semaphore: a read returns SMBI clear to exactly one
// reader, which then owns it until it writes SMBI clear.
func (m *Model) readSWSM(_ int, v uint32) uint32 {
	off := uint32(i82599.SWSM)
	if m.cfg.Flavor == X82576 {
		off = i82576.SWSM
	}
	m.set(off, v|1)
	return v
}

// readCTRL: RST reads 1 until the reset is done.
func (m *Model) readCTRL(_ int, v uint32) uint32 {
	if m.inReset() {
		v |= intelnic.CtrlReset
	}
	return v
}
