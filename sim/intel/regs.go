package intel

import (
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Registers shared by both flavours at the same offset.
const (
	ctrl      = 0x00000
	status    = 0x00008
	rxcsum    = 0x05000
	mta       = 0x05200 // 128 registers
	gprc      = 0x04074
	gptc      = 0x04080
	gorcl     = 0x04088
	gorch     = 0x0408C
	gotcl     = 0x04090
	gotch     = 0x04094
	ruc       = 0x040A4
	roc       = 0x040AC
	ctrlRST   = 1 << 26
	ctrlLNKRS = 1 << 3
)

// 82599 registers the engine uses by name.
const (
	ctrlExt          = 0x00018
	eec              = 0x10010
	eerd             = 0x10014
	swsm             = 0x10140
	rxctrl           = 0x03000
	rdrxctl          = 0x02F00
	rxpbsize0        = 0x03C00
	hlreg0           = 0x04240
	maxfrs           = 0x04268
	autoc            = 0x042A0
	links            = 0x042A4
	dmatxctl         = 0x04A80
	fctrl            = 0x05080
	mcstctrl         = 0x05090
	hlreg0TxCRC      = 1 << 0
	hlreg0RxCRCStrip = 1 << 1
	hlreg0Jumbo      = 1 << 2
	hlreg0TxPad      = 1 << 10
	fctrlMPE         = 1 << 8
	fctrlUPE         = 1 << 9
	fctrlBAM         = 1 << 10
	eecPresent       = 1 << 8
	eecAutoRead      = 1 << 9
	eecReq           = 1 << 6
	eecGnt           = 1 << 7
	eerdStart        = 1 << 0
	eerdDone         = 1 << 1
	rdrxctlDMAIDone  = 1 << 3
	qprdc            = 0x01430 // QPRDC(0); Linux ixgbe_type.h: IXGBE_QPRDC(_i) (0x01430 + ((_i) * 0x40)), 16 of these
	qRQDPC           = 0x30    // 82576 RQDPC inside an RX queue's block (e1000_regs.h: 0x0C030 + 0x40·n)
	autocANRestart   = 1 << 12
	secrxctrl        = 0x08D00
	secrxctrlRxDis   = 1 << 1
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
		{Name: "CTRL", Off: ctrl, Access: sim.RW, SelfClear: ctrlRST | ctrlLNKRS, Write: m.writeCTRL, Read: m.readCTRL},
		{Name: "STATUS", Off: status, Access: sim.RO, Read: m.readSTATUS},
		rw("CTRL_EXT", ctrlExt, 1, 0, 0),
		rw("ESDP", 0x00020, 1, 0, 0),
		rw("I2CCTL", 0x00028, 1, 0, 0),
		rw("LEDCTL", 0x00200, 1, 0, 0),
		{Name: "EEC", Off: eec, Access: sim.RW, Mask: 0x4F, Reset: eecPresent | eecAutoRead,
			Read: func(_ int, v uint32) uint32 {
				if v&eecReq != 0 {
					v |= eecGnt
				}
				return v
			}},
		{Name: "EERD", Off: eerd, Access: sim.RW, Write: m.writeEERD},
		{Name: "SWSM", Off: swsm, Access: sim.RW, Mask: 0x3, Read: m.readSWSM},
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
		{Name: "EICS_EX", Off: eicsEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEICSEx},
		{Name: "EIMS_EX", Off: eimsEx0, N: 2, Stride: 4, Access: sim.RO, Read: m.readEIMSEx, Write: m.writeEIMSEx},
		{Name: "EIMC_EX", Off: eimcEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEIMCEx},
		rw("EIAM_EX", eiamEx0, 2, 4, 0),
		rw("PBACL", 0x110C0, 1, 0, 0),

		// Receive.
		m.rxRingRegs()[0], m.rxRingRegs()[1], m.rxRingRegs()[2],
		rw("DCA_RXCTRL", l.rxq(0, 0x0C), nq, qStride, 0x2200),
		m.rxRingRegs()[3], m.rxRingRegs()[4], m.rxRingRegs()[5], m.rxRingRegs()[6],
		rw("RSCCTL", l.rxq(0, 0x2C), nq, qStride, 0),
		{Name: "SRRCTL", Off: 0x02100, N: 16, Stride: 4, Access: sim.RW, // 82598 alias of queues 0-15
			Read: func(i int, _ uint32) uint32 { return m.get(l.srrctl(i)) },
			Write: func(i int, _, v uint32) {
				old := m.get(l.srrctl(i))
				m.set(l.srrctl(i), v)
				m.guardLatched(false, i, "SRRCTL", l.srrctl(i), old)
			}},
		m.alias("DCA_RXCTRL", 0x02200, 16, 4, func(i int) uint32 { return l.rxq(i, 0x0C) }),
		{Name: "RDRXCTL", Off: rdrxctl, Access: sim.RW, Mask: ^uint32(rdrxctlDMAIDone), Reset: rdrxctlDMAIDone},
		{Name: "RXCTRL", Off: rxctrl, Access: sim.RW, Write: m.writeRXCTRL},
		rw("RXPBSIZE", rxpbsize0, 1, 0, 512<<10),
		rw("RXPBSIZE", rxpbsize0+4, 7, 4, 0),
		rw("RTRPCS", 0x02430, 1, 0, 0),
		rw("RTRUP2TC", 0x03020, 1, 0, 0),
		rw("FCTTV", 0x03200, 4, 4, 0),
		rw("FCRTL", 0x03220, 8, 4, 0),
		rw("FCRTH", 0x03260, 8, 4, 0),
		rw("FCRTV", 0x032A0, 1, 0, 0),
		rw("FCCFG", 0x03D00, 1, 0, 0),
		rw("RXCSUM", rxcsum, 1, 0, 0),
		rw("RFCTL", 0x05008, 1, 0, 0),
		rw("FCTRL", fctrl, 1, 0, 0),
		rw("VLNCTRL", 0x05088, 1, 0, 0x8100),
		rw("MCSTCTRL", mcstctrl, 1, 0, 0),
		table("MTA", mta, 128),
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
		{Name: "SECRXCTRL", Off: secrxctrl, Access: sim.RW, Write: m.writeSECRXCTRL},
		{Name: "SECRXSTAT", Off: 0x08D04, Access: sim.RO, Read: m.readSECRXSTAT},
		rw("SECTXCTRL", 0x08800, 1, 0, 0),
		{Name: "SECTXSTAT", Off: 0x08804, Access: sim.RO, Reset: 1},
		rw("SECTXMINIFG", 0x08810, 1, 0, 0),

		// MAC.
		rw("HLREG0", hlreg0, 1, 0, hlreg0TxCRC|hlreg0RxCRCStrip|hlreg0TxPad),
		{Name: "HLREG1", Off: 0x04244, Access: sim.RO},
		rw("PAP", 0x04248, 1, 0, 0),
		rw("MSCA", 0x0425C, 1, 0, 0),
		rw("MSRWD", 0x04260, 1, 0, 0),
		rw("MAXFRS", maxfrs, 1, 0, 1518<<16),
		rw("MFLCN", 0x04294, 1, 0, 0),
		{Name: "AUTOC", Off: autoc, Access: sim.RW, Reset: autocReset, SelfClear: autocANRestart, Write: m.writeAUTOC},
		{Name: "LINKS", Off: links, Access: sim.RO, Read: m.readLINKS},
		rw("AUTOC2", 0x042A8, 1, 0, 0),
		rw("AUTOC3", 0x042AC, 1, 0, 0),
		{Name: "ANLP1", Off: 0x042B0, Access: sim.RO},
		{Name: "ANLP2", Off: 0x042B4, Access: sim.RO},
		{Name: "LINKS2", Off: 0x04324, Access: sim.RO},
		rw("MACC", 0x04330, 1, 0, 0),

		// Transmit.
		m.txRingRegs()[0], m.txRingRegs()[1], m.txRingRegs()[2],
		rw("DCA_TXCTRL", l.txq(0, 0x0C), nq, qStride, 0x2200),
		m.txRingRegs()[3], m.txRingRegs()[4], m.txRingRegs()[5],
		rw("TDWBAL", l.txq(0, qWBAL), nq, qStride, 0),
		rw("TDWBAH", l.txq(0, qWBAH), nq, qStride, 0),
		{Name: "DMATXCTL", Off: dmatxctl, Access: sim.RW, Doorbell: func(int, uint32) { m.transmitAll() }},
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
		stat("GPRC", gprc, 1, 0),
		stat("BPRC", 0x04078, 1, 0),
		stat("MPRC", 0x0407C, 1, 0),
		stat("GPTC", gptc, 1, 0),
		stat("GORCL", gorcl, 1, 0),
		stat("GORCH", gorch, 1, 0),
		stat("GOTCL", gotcl, 1, 0),
		stat("GOTCH", gotch, 1, 0),
		stat("RUC", ruc, 1, 0),
		stat("RFC", 0x040A8, 1, 0),
		stat("ROC", roc, 1, 0),
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
		stat("QPRC", 0x01030, 16, qStride),
		stat("QBRC_L", 0x01034, 16, qStride),
		stat("QBRC_H", 0x01038, 16, qStride),
		stat("QPRDC", qprdc, 16, qStride),
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
	case v&ctrlRST != 0:
		m.st.Resets++
		m.swReset = true
		m.dev.ResetRegisters()
	case m.cfg.Flavor == X82599 && v&ctrlLNKRS != 0,
		m.cfg.Flavor == X82576 && v&ctrlPHYRST != 0:
		m.link.reset(m)
	}
}

// writeAUTOC restarts auto-negotiation on AN_RESTART.
func (m *Model) writeAUTOC(_ int, _, v uint32) {
	if v&autocANRestart != 0 {
		m.link.reset(m)
	}
}

// writeEERD performs an EEPROM word read: the word appears in bits 31:16 with DONE.
func (m *Model) writeEERD(_ int, _, v uint32) {
	if v&eerdStart == 0 {
		return
	}
	addr := v >> 2 & 0x3FFF
	var word uint32
	if int(addr) < len(m.eeprom) {
		word = uint32(m.eeprom[addr])
	}
	off := uint32(eerd)
	if m.cfg.Flavor == X82576 {
		off = eerd82576
	}
	m.set(off, word<<16|addr<<2|eerdDone)
}

// readSWSM implements the software semaphore: a read returns SMBI clear to exactly one
// reader, which then owns it until it writes SMBI clear.
func (m *Model) readSWSM(_ int, v uint32) uint32 {
	m.set(swsm, v|1)
	return v
}

// rxRingRegs are the RX queue registers: RDBAL, RDBAH, RDLEN, RDH, SRRCTL, RDT, RXDCTL.
// The ring's base, length and SRRCTL (and RDH) are latched at enable; the tail counts
// only once the queue is on; ENABLE completes asynchronously.
func (m *Model) rxRingRegs() [7]sim.Reg {
	l, nq := m.l, m.l.queues
	at := func(reg uint32) func(q int) uint32 { return func(q int) uint32 { return l.rxq(q, reg) } }
	return [7]sim.Reg{
		{Name: "RDBAL", Off: l.rxq(0, qBAL), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFFFF80, Write: m.latchedReg(false, "RDBAL", at(qBAL))},
		{Name: "RDBAH", Off: l.rxq(0, qBAH), N: nq, Stride: qStride, Access: sim.RW, Write: m.latchedReg(false, "RDBAH", at(qBAH))},
		{Name: "RDLEN", Off: l.rxq(0, qLEN), N: nq, Stride: qStride, Access: sim.RW, Mask: 0x000FFF80, Write: m.latchedReg(false, "RDLEN", at(qLEN))},
		{Name: "RDH", Off: l.rxq(0, qH), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFF, Write: m.latchedReg(false, "RDH", at(qH))},
		{Name: "SRRCTL", Off: l.srrctl(0), N: nq, Stride: qStride, Access: sim.RW, Reset: 0x402, Write: m.latchedReg(false, "SRRCTL", l.srrctl)},
		{Name: "RDT", Off: l.rxq(0, qT), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFF, Write: m.writeRDT},
		{Name: "RXDCTL", Off: l.rxq(0, qDCTL), N: nq, Stride: qStride, Access: sim.RW,
			Write: func(q int, old, v uint32) { m.writeDCTL(false, q, old, v) }},
	}
}

// txRingRegs are the TX queue registers: TDBAL, TDBAH, TDLEN, TDH, TDT, TXDCTL, with the
// same latching as rxRingRegs.
func (m *Model) txRingRegs() [6]sim.Reg {
	l, nq := m.l, m.l.queues
	at := func(reg uint32) func(q int) uint32 { return func(q int) uint32 { return l.txq(q, reg) } }
	return [6]sim.Reg{
		{Name: "TDBAL", Off: l.txq(0, qBAL), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFFFF80, Write: m.latchedReg(true, "TDBAL", at(qBAL))},
		{Name: "TDBAH", Off: l.txq(0, qBAH), N: nq, Stride: qStride, Access: sim.RW, Write: m.latchedReg(true, "TDBAH", at(qBAH))},
		{Name: "TDLEN", Off: l.txq(0, qLEN), N: nq, Stride: qStride, Access: sim.RW, Mask: 0x000FFF80, Write: m.latchedReg(true, "TDLEN", at(qLEN))},
		{Name: "TDH", Off: l.txq(0, qH), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFF, Write: m.latchedReg(true, "TDH", at(qH))},
		{Name: "TDT", Off: l.txq(0, qT), N: nq, Stride: qStride, Access: sim.RW, Mask: 0xFFFF, Write: m.writeTDT, Doorbell: m.doorbellTDT},
		{Name: "TXDCTL", Off: l.txq(0, qDCTL), N: nq, Stride: qStride, Access: sim.RW,
			Write: func(q int, old, v uint32) { m.writeDCTL(true, q, old, v) }},
	}
}

// readCTRL: RST reads 1 until the reset is done.
func (m *Model) readCTRL(_ int, v uint32) uint32 {
	if m.inReset() {
		v |= ctrlRST
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
	case v&secrxctrlRxDis != 0 && old&secrxctrlRxDis == 0:
		m.secRdyAt = wire.Now() + int64(m.timing.SecRxReady)
	case v&secrxctrlRxDis == 0:
		m.secRdyAt = 0
	}
}

func (m *Model) secRxReady() bool {
	return m.get(secrxctrl)&secrxctrlRxDis != 0 && wire.Now() >= m.secRdyAt
}

func (m *Model) readSECRXSTAT(int, uint32) uint32 {
	if m.secRxReady() {
		return 1
	}
	return 0
}
