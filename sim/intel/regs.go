package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// stat returns read-to-clear statistics counters.
func stat(name string, off uint32, n int, stride uint32) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: stride, Access: sim.RO, ReadClear: true}
}

// tableGarbage is what the multicast, VLAN and unicast hash tables hold at power-on: the
// datasheets define no reset value for them and a reset leaves them alone (Linux clears
// them in ixgbe_init_rx_addrs_generic / igb's e1000_clear_vfta), so a driver that does
// not clear them sees stray filter hits.
const tableGarbage = 0x5A5A5A5A

// table returns registers of a filter table the driver must clear.
func table(name string, off uint32, n int) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: 4, Access: sim.RW, Reset: tableGarbage, Sticky: true}
}

// rw returns plain read/write registers.
func rw(name string, off uint32, n int, stride uint32, reset uint32) sim.Reg {
	return sim.Reg{Name: name, Off: off, N: n, Stride: stride, Access: sim.RW, Reset: reset}
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

func (m *Model) registers82599() []sim.Reg {
	l := m.l
	nq := l.queues
	regs := []sim.Reg{
		// General control.
		{Name: "CTRL", Off: intelnic.CTRL, Access: sim.RW, SelfClear: intelnic.CtrlReset | intelnic.CtrlLinkReset, Write: m.writeCTRL, Read: m.readCTRL},
		{Name: "STATUS", Off: intelnic.STATUS, Access: sim.RO, Read: m.readSTATUS},
		rw("CTRL_EXT", intelnic.CTRLEXT, 1, 0, 0),
		rw("ESDP", 0x00020, 1, 0, 0),
		rw("I2CCTL", 0x00028, 1, 0, 0),
		rw("LEDCTL", 0x00200, 1, 0, 0),
		{Name: "EEC", Off: i82599.EEC, Access: sim.RW, Mask: 0x4F, Reset: intelnic.EecPresent | intelnic.EecAutoRead,
			Read: func(_ int, v uint32) uint32 {
				if v&intelnic.EecReq != 0 {
					v |= intelnic.EecGnt
				}
				return v
			}},
		{Name: "EERD", Off: i82599.EERD, Access: sim.RW, Write: m.writeEERD},
		{Name: "SWSM", Off: i82599.SWSM, Access: sim.RW, Mask: 0x3, Read: m.readSWSM},
		{Name: "FWSM", Off: 0x10148, Access: sim.RO},
		rw("GSSR", 0x10160, 1, 0, 0),
		rw("GCR", 0x11000, 1, 0, 0),
		rw("GCR_EXT", 0x11050, 1, 0, 0),
		rw("GPIE", l.gpie, 1, 0, 0),

		// Interrupts.
		{Name: "EICR", Off: l.eicr, Access: sim.RO, Read: m.readEICR, Write: m.writeEICR},
		{Name: "EICS", Off: l.eics, Access: sim.WO, Read: m.readEICS, Write: m.writeEICS},
		rw("EIAC", l.eiac, 1, 0, 0),
		{Name: "EIMS", Off: l.eims, Access: sim.RO, Read: m.readEIMS, Write: m.writeEIMS},
		{Name: "EIMC", Off: l.eimc, Access: sim.WO, Write: m.writeEIMC},
		rw("EIAM", l.eiam, 1, 0, 0),
		rw("EITRSEL", 0x00894, 1, 0, 0),
		{Name: "EITR", Off: 0x820, N: 24, Stride: 4, Access: sim.RW, Mask: 0x80000FF8},
		{Name: "EITR", Off: 0x12300, N: l.vectors - 24, Stride: 4, Access: sim.RW, Mask: 0x80000FF8},
		{Name: "IVAR", Off: l.ivar0, N: 64, Stride: 4, Access: sim.RW, Mask: 0xBFBFBFBF},
		{Name: "IVAR_MISC", Off: l.ivarMisc, Access: sim.RW, Mask: 0xBFBF},
		{Name: "EICS_EX", Off: i82599.EICSEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEICSEx},
		{Name: "EIMS_EX", Off: i82599.EIMSEx0, N: 2, Stride: 4, Access: sim.RO, Read: m.readEIMSEx, Write: m.writeEIMSEx},
		{Name: "EIMC_EX", Off: i82599.EIMCEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEIMCEx},
		rw("EIAM_EX", i82599.EIAMEx0, 2, 4, 0),
		rw("PBACL", 0x110C0, 1, 0, 0),

		// Receive.
		m.rxRingRegs()[0], m.rxRingRegs()[1], m.rxRingRegs()[2],
		rw("DCA_RXCTRL", l.rxq(0, 0x0C), nq, intelnic.QStride, 0x2200),
		m.rxRingRegs()[3], m.rxRingRegs()[4], m.rxRingRegs()[5], m.rxRingRegs()[6],
		rw("RSCCTL", l.rxq(0, 0x2C), nq, intelnic.QStride, 0),
		{Name: "SRRCTL", Off: 0x02100, N: 16, Stride: 4, Access: sim.RW, // 82598 alias of queues 0-15
			Read: func(i int, _ uint32) uint32 { return m.get(l.srrctl(i)) },
			Write: func(i int, _, v uint32) {
				old := m.get(l.srrctl(i))
				m.set(l.srrctl(i), v)
				m.guardLatched(false, i, "SRRCTL", l.srrctl(i), old)
			}},
		m.alias("DCA_RXCTRL", 0x02200, 16, 4, func(i int) uint32 { return l.rxq(i, 0x0C) }),
		{Name: "RDRXCTL", Off: i82599.RDRXCTL, Access: sim.RW, Mask: ^uint32(i82599.RdrxctlDMAIDone), Reset: i82599.RdrxctlDMAIDone},
		{Name: "RXCTRL", Off: i82599.RXCTRL, Access: sim.RW, Write: m.writeRXCTRL},
		rw("RXPBSIZE", i82599.RXPBSIZE0, 1, 0, 512<<10),
		rw("RXPBSIZE", i82599.RXPBSIZE0+4, 7, 4, 0),
		rw("RTRPCS", 0x02430, 1, 0, 0),
		rw("RTRUP2TC", 0x03020, 1, 0, 0),
		rw("FCTTV", 0x03200, 4, 4, 0),
		rw("FCRTL", 0x03220, 8, 4, 0),
		rw("FCRTH", 0x03260, 8, 4, 0),
		rw("FCRTV", 0x032A0, 1, 0, 0),
		rw("FCCFG", 0x03D00, 1, 0, 0),
		rw("RXCSUM", intelnic.RXCSUM, 1, 0, 0),
		rw("RFCTL", 0x05008, 1, 0, 0),
		rw("FCTRL", i82599.FCTRL, 1, 0, 0),
		rw("VLNCTRL", 0x05088, 1, 0, 0x8100),
		rw("MCSTCTRL", i82599.MCSTCTRL, 1, 0, 0),
		table("MTA", intelnic.MTA, 128),
		rw("PSRTYPE", 0x0EA00, 64, 4, 0),
		rw("MRQC", l.mrqc, 1, 0, 0),
		rw("VT_CTL", 0x051B0, 1, 0, 0),
		rw("RETA", l.reta, 32, 4, 0),
		rw("RSSRK", l.rssrk, 10, 4, 0),
		table("VFTA", 0x0A000, 128),
		table("UTA", 0x0F400, 128), // Linux ixgbe_type.h IXGBE_UTA(_i) 0x0F400 + 4·i
		rw("RAL", l.ralBase, l.rarEntries, 8, 0),
		rw("RAH", l.ralBase+4, l.rarEntries, 8, 0),
		m.alias("RAL", 0x05400, 16, 8, l.ral),
		m.alias("RAH", 0x05404, 16, 8, l.rah),
		rw("MPSAR_LO", 0x0A600, 128, 8, 0),
		rw("MPSAR_HI", 0x0A604, 128, 8, 0),
		{Name: "SECRXCTRL", Off: i82599.SECRXCTRL, Access: sim.RW, Write: m.writeSECRXCTRL},
		{Name: "SECRXSTAT", Off: 0x08D04, Access: sim.RO, Read: m.readSECRXSTAT},
		rw("SECTXCTRL", 0x08800, 1, 0, 0),
		{Name: "SECTXSTAT", Off: 0x08804, Access: sim.RO, Reset: 1},
		rw("SECTXMINIFG", 0x08810, 1, 0, 0),

		// MAC.
		rw("HLREG0", i82599.HLREG0, 1, 0, i82599.Hlreg0TxCRCEn|i82599.Hlreg0RxCRCStrp|i82599.Hlreg0TxPadEn),
		{Name: "HLREG1", Off: 0x04244, Access: sim.RO},
		rw("PAP", 0x04248, 1, 0, 0),
		rw("MSCA", 0x0425C, 1, 0, 0),
		rw("MSRWD", 0x04260, 1, 0, 0),
		rw("MAXFRS", i82599.MAXFRS, 1, 0, 1518<<16),
		rw("MFLCN", 0x04294, 1, 0, 0),
		{Name: "AUTOC", Off: i82599.AUTOC, Access: sim.RW, Reset: autocReset, SelfClear: i82599.AutocAnRestart, Write: m.writeAUTOC},
		{Name: "LINKS", Off: i82599.LINKS, Access: sim.RO, Read: m.readLINKS},
		rw("AUTOC2", 0x042A8, 1, 0, 0),
		rw("AUTOC3", 0x042AC, 1, 0, 0),
		{Name: "ANLP1", Off: 0x042B0, Access: sim.RO},
		{Name: "ANLP2", Off: 0x042B4, Access: sim.RO},
		{Name: "LINKS2", Off: 0x04324, Access: sim.RO},
		rw("MACC", 0x04330, 1, 0, 0),

		// Transmit.
		m.txRingRegs()[0], m.txRingRegs()[1], m.txRingRegs()[2],
		rw("DCA_TXCTRL", l.txq(0, 0x0C), nq, intelnic.QStride, 0x2200),
		m.txRingRegs()[3], m.txRingRegs()[4], m.txRingRegs()[5],
		rw("TDWBAL", l.txq(0, intelnic.QWBAL), nq, intelnic.QStride, 0),
		rw("TDWBAH", l.txq(0, intelnic.QWBAH), nq, intelnic.QStride, 0),
		{Name: "DMATXCTL", Off: i82599.DMATXCTL, Access: sim.RW, Doorbell: func(int, uint32) { m.transmitAll() }},
		rw("DTXMXSZRQ", 0x08100, 1, 0, 0xFFF),
		rw("MTQC", 0x08120, 1, 0, 0),
		rw("PFDTXGSWC", 0x08220, 1, 0, 0),
		rw("TXPBSIZE", 0x0CC00, 1, 0, 160<<10),
		rw("TXPBSIZE", 0x0CC04, 7, 4, 0),
		rw("TXPBTHRESH", 0x04950, 8, 4, 0),
		rw("RTTDCS", 0x04900, 1, 0, 0),
		rw("RTTDQSEL", 0x04904, 1, 0, 0),
		rw("RTTDT1C", 0x04908, 1, 0, 0),
		rw("RTTBCNRC", 0x04984, 1, 0, 0),
		rw("RTTUP2TC", 0x0C800, 1, 0, 0),
		rw("RTTPCS", 0x0CD00, 1, 0, 0),

		// Statistics (read to clear).
		stat("CRCERRS", 0x04000, 1, 0),
		stat("ILLERRC", 0x04004, 1, 0),
		stat("ERRBC", 0x04008, 1, 0),
		stat("MSPDC", 0x04010, 1, 0),
		stat("MPC", l.mpc, 8, 4),
		stat("MLFC", 0x04034, 1, 0),
		stat("MRFC", 0x04038, 1, 0),
		stat("RLEC", 0x04040, 1, 0),
		stat("LXONTXC", 0x03F60, 1, 0),
		stat("LXOFFTXC", 0x03F68, 1, 0),
		stat("LXONRXCNT", 0x041A4, 1, 0),
		stat("LXOFFRXCNT", 0x041A8, 1, 0),
		stat("PXONTXC", 0x03F00, 8, 4),
		stat("PXOFFTXC", 0x03F20, 8, 4),
		stat("PXONRXCNT", 0x04140, 8, 4),
		stat("PXOFFRXCNT", 0x04160, 8, 4),
		stat("PXON2OFFCNT", 0x03240, 8, 4),
		stat("RNBC", 0x03FC0, 8, 4),
		stat("PRC64..PRC1522", 0x0405C, 6, 4),
		stat("GPRC", intelnic.GPRC, 1, 0),
		stat("BPRC", 0x04078, 1, 0),
		stat("MPRC", 0x0407C, 1, 0),
		stat("GPTC", intelnic.GPTC, 1, 0),
		stat("GORCL", intelnic.GORCL, 1, 0),
		stat("GORCH", intelnic.GORCH, 1, 0),
		stat("GOTCL", intelnic.GOTCL, 1, 0),
		stat("GOTCH", intelnic.GOTCH, 1, 0),
		stat("RUC", intelnic.RUC, 1, 0),
		stat("RFC", 0x040A8, 1, 0),
		stat("ROC", intelnic.ROC, 1, 0),
		stat("RJC", 0x040B0, 1, 0),
		stat("MNGPRC", 0x040B4, 1, 0),
		stat("MNGPDC", 0x040B8, 1, 0),
		stat("TORL", 0x040C0, 1, 0),
		stat("TORH", 0x040C4, 1, 0),
		stat("TPR", 0x040D0, 1, 0),
		stat("TPT", 0x040D4, 1, 0),
		stat("PTC64..PTC1522", 0x040D8, 6, 4),
		stat("MPTC", 0x040F0, 1, 0),
		stat("BPTC", 0x040F4, 1, 0),
		stat("XEC", 0x04120, 1, 0),
		stat("SSVPC", 0x08780, 1, 0),
		stat("MNGPTC", 0x0CF90, 1, 0),
		stat("RXNFGPC", 0x041B0, 1, 0),
		stat("RXDGPC", 0x02F50, 1, 0),
		stat("TXDGPC", 0x087A0, 1, 0),
		stat("QPRC", 0x01030, 16, intelnic.QStride),
		stat("QBRC_L", 0x01034, 16, intelnic.QStride),
		stat("QBRC_H", 0x01038, 16, intelnic.QStride),
		stat("QPRDC", i82599.QPRDC(0), 16, intelnic.QStride),
		stat("QPTC", 0x08680, 16, 4),
		stat("QBTC_L", 0x08700, 16, 8),
		stat("QBTC_H", 0x08704, 16, 8),
	}
	return regs
}

// writeCTRL handles the global reset bits: RST resets the whole device (the driver must
// wait for the bit to read back clear), LNK_RST restarts the link.
func (m *Model) writeCTRL(_ int, _, v uint32) {
	switch {
	case v&intelnic.CtrlReset != 0:
		m.st.Resets++
		m.swReset = true
		m.dev.ResetRegisters()
	case m.cfg.Flavor == X82599 && v&intelnic.CtrlLinkReset != 0,
		m.cfg.Flavor == X82576 && v&i82576.CtrlPHYRST != 0:
		m.link.reset(m)
	}
}

// writeAUTOC restarts auto-negotiation on AN_RESTART.
func (m *Model) writeAUTOC(_ int, _, v uint32) {
	if v&i82599.AutocAnRestart != 0 {
		m.link.reset(m)
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
	m.set(i82599.SWSM, v|1)
	return v
}

// rxRingRegs are the RX queue registers: RDBAL, RDBAH, RDLEN, RDH, SRRCTL, RDT, RXDCTL.
// The ring's base, length and SRRCTL (and RDH) are latched at enable; the tail counts
// only once the queue is on; ENABLE completes asynchronously.
func (m *Model) rxRingRegs() [7]sim.Reg {
	l, nq := m.l, m.l.queues
	at := func(reg uint32) func(q int) uint32 { return func(q int) uint32 { return l.rxq(q, reg) } }
	return [7]sim.Reg{
		{Name: "RDBAL", Off: l.rxq(0, intelnic.QBAL), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFFFF80, Write: m.latchedReg(false, "RDBAL", at(intelnic.QBAL))},
		{Name: "RDBAH", Off: l.rxq(0, intelnic.QBAH), N: nq, Stride: intelnic.QStride, Access: sim.RW, Write: m.latchedReg(false, "RDBAH", at(intelnic.QBAH))},
		{Name: "RDLEN", Off: l.rxq(0, intelnic.QLEN), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0x000FFF80, Write: m.latchedReg(false, "RDLEN", at(intelnic.QLEN))},
		{Name: "RDH", Off: l.rxq(0, intelnic.QH), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFF, Write: m.latchedReg(false, "RDH", at(intelnic.QH))},
		{Name: "SRRCTL", Off: l.srrctl(0), N: nq, Stride: intelnic.QStride, Access: sim.RW, Reset: 0x402, Write: m.latchedReg(false, "SRRCTL", l.srrctl)},
		{Name: "RDT", Off: l.rxq(0, intelnic.QT), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFF, Write: m.writeRDT},
		{Name: "RXDCTL", Off: l.rxq(0, intelnic.QDCTL), N: nq, Stride: intelnic.QStride, Access: sim.RW,
			Write: func(q int, old, v uint32) { m.writeDCTL(false, q, old, v) }},
	}
}

// txRingRegs are the TX queue registers: TDBAL, TDBAH, TDLEN, TDH, TDT, TXDCTL, with the
// same latching as rxRingRegs.
func (m *Model) txRingRegs() [6]sim.Reg {
	l, nq := m.l, m.l.queues
	at := func(reg uint32) func(q int) uint32 { return func(q int) uint32 { return l.txq(q, reg) } }
	return [6]sim.Reg{
		{Name: "TDBAL", Off: l.txq(0, intelnic.QBAL), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFFFF80, Write: m.latchedReg(true, "TDBAL", at(intelnic.QBAL))},
		{Name: "TDBAH", Off: l.txq(0, intelnic.QBAH), N: nq, Stride: intelnic.QStride, Access: sim.RW, Write: m.latchedReg(true, "TDBAH", at(intelnic.QBAH))},
		{Name: "TDLEN", Off: l.txq(0, intelnic.QLEN), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0x000FFF80, Write: m.latchedReg(true, "TDLEN", at(intelnic.QLEN))},
		{Name: "TDH", Off: l.txq(0, intelnic.QH), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFF, Write: m.latchedReg(true, "TDH", at(intelnic.QH))},
		{Name: "TDT", Off: l.txq(0, intelnic.QT), N: nq, Stride: intelnic.QStride, Access: sim.RW, Mask: 0xFFFF, Write: m.writeTDT, Doorbell: m.doorbellTDT},
		{Name: "TXDCTL", Off: l.txq(0, intelnic.QDCTL), N: nq, Stride: intelnic.QStride, Access: sim.RW,
			Write: func(q int, old, v uint32) { m.writeDCTL(true, q, old, v) }},
	}
}

// readCTRL: RST reads 1 until the reset is done.
func (m *Model) readCTRL(_ int, v uint32) uint32 {
	if m.inReset() {
		v |= intelnic.CtrlReset
	}
	return v
}

// writeRXCTRL: turning RX off discards the packet buffer's frames. Turning it on while
// the security RX path is not disabled and drained is the 82599 erratum Linux works
// around in ixgbe_enable_rx_dma_82599 ("If traffic is incoming before we enable the Rx
// unit, it could hang the Rx DMA unit"): a protocol fault.
func (m *Model) writeRXCTRL(_ int, old, v uint32) {
	if v&1 == 0 {
		m.fifo.clear()
		return
	}
	if old&1 == 0 && !m.secRxReady() {
		m.protocol("RXCTRL.RXEN set while the security RX path is not halted (SECRXCTRL.RX_DIS with SECRXSTAT.SECRX_RDY)")
	}
}

// writeSECRXCTRL: setting RX_DIS starts draining the security RX path, which is ready
// (SECRXSTAT.SECRX_RDY) Timing.SecRxReady later.
func (m *Model) writeSECRXCTRL(_ int, old, v uint32) {
	switch {
	case v&i82599.SecrxctrlRxDis != 0 && old&i82599.SecrxctrlRxDis == 0:
		m.secRdyAt = wire.Now() + int64(m.timing.SecRxReady)
	case v&i82599.SecrxctrlRxDis == 0:
		m.secRdyAt = 0
	}
}

func (m *Model) secRxReady() bool {
	return m.get(i82599.SECRXCTRL)&i82599.SecrxctrlRxDis != 0 && wire.Now() >= m.secRdyAt
}

func (m *Model) readSECRXSTAT(int, uint32) uint32 {
	if m.secRxReady() {
		return 1
	}
	return 0
}
