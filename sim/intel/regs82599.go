package intel

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// registers82599 is the 82599 table: sharedRegs and the registers only it has.
func (m *Model) registers82599() []sim.Reg {
	l := m.l
	nq := l.queues
	return append(m.sharedRegs(), []sim.Reg{
		// General control.
		{Name: "CTRL", Off: intelnic.CTRL, Access: sim.RW, SelfClear: intelnic.CtrlReset | intelnic.CtrlLinkReset, Write: m.writeCTRL, Read: m.readCTRL},
		{Name: "ESDP", Off: i82599.ESDP, Access: sim.RW, Reset: m.esdpReset(), Sticky: true, Write: m.writeLinkReg},
		rw("I2CCTL", 0x00028, 1, 0, 0),
		rw("LEDCTL", 0x00200, 1, 0, 0),
		{Name: "EEC", Off: i82599.EEC, Access: sim.RW, Mask: 0x4F, Reset: intelnic.EecPresent | intelnic.EecAutoRead, Read: readEEC},
		{Name: "EERD", Off: i82599.EERD, Access: sim.RW, Write: m.writeEERD},
		{Name: "SWSM", Off: i82599.SWSM, Access: sim.RW, Mask: 0x3, Read: m.readSWSM},
		{Name: "FWSM", Off: 0x10148, Access: sim.RO},
		rw("GSSR", 0x10160, 1, 0, 0),
		rw("GCR", 0x11000, 1, 0, 0),
		rw("GCR_EXT", 0x11050, 1, 0, 0),
		rw("GPIE", l.gpie, 1, 0, 0),

		// Interrupts.
		rw("EITRSEL", 0x00894, 1, 0, 0),
		{Name: "EITR", Off: i82599.EITR0, N: 24, Stride: 4, Access: sim.RW, Mask: 0x80000FF8},
		{Name: "EITR", Off: i82599.EITR24, N: l.vectors - 24, Stride: 4, Access: sim.RW, Mask: 0x80000FF8},
		{Name: "IVAR", Off: l.ivar0, N: 64, Stride: 4, Access: sim.RW, Mask: 0xBFBFBFBF},
		{Name: "IVAR_MISC", Off: l.ivarMisc, Access: sim.RW, Mask: 0xBFBF},
		{Name: "EICS_EX", Off: i82599.EICSEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEICSEx},
		{Name: "EIMS_EX", Off: i82599.EIMSEx0, N: 2, Stride: 4, Access: sim.RO, Read: m.readEIMSEx, Write: m.writeEIMSEx},
		{Name: "EIMC_EX", Off: i82599.EIMCEx0, N: 2, Stride: 4, Access: sim.WO, Write: m.writeEIMCEx},
		rw("EIAM_EX", i82599.EIAMEx0, 2, 4, 0),
		rw("PBACL", 0x110C0, 1, 0, 0),

		// Receive.
		rw("DCA_RXCTRL", l.rxq(0, i82599.QDCARX), nq, intelnic.QStride, 0x2200),
		rw("RSCCTL", l.rxq(0, 0x2C), nq, intelnic.QStride, 0),
		{Name: "SRRCTL", Off: i82599.SRRCTL(0), N: 16, Stride: 4, Access: sim.RW, // 82598 alias of queues 0-15
			Read: func(i int, _ uint32) uint32 { return m.get(l.srrctl(i)) },
			Write: func(i int, _, v uint32) {
				old := m.get(l.srrctl(i))
				m.set(l.srrctl(i), v)
				m.guardLatched(false, i, "SRRCTL", l.srrctl(i), old)
			}},
		m.alias("DCA_RXCTRL", 0x02200, 16, 4, func(i int) uint32 { return l.rxq(i, i82599.QDCARX) }),
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
		rw("FCTRL", i82599.FCTRL, 1, 0, 0),
		rw("VLNCTRL", 0x05088, 1, 0, 0x8100),
		rw("MCSTCTRL", i82599.MCSTCTRL, 1, 0, 0),
		rw("PSRTYPE", 0x0EA00, 64, 4, 0),
		rw("VT_CTL", 0x051B0, 1, 0, 0),
		table("VFTA", i82599.VFTA, 128),
		table("UTA", i82599.UTA, 128),
		m.alias("RAL", intelnic.RAL0, 16, 8, l.ral),
		m.alias("RAH", intelnic.RAH0, 16, 8, l.rah),
		rw("MPSAR_LO", 0x0A600, 128, 8, 0),
		rw("MPSAR_HI", 0x0A604, 128, 8, 0),
		{Name: "SECRXCTRL", Off: i82599.SECRXCTRL, Access: sim.RW, Write: m.writeSECRXCTRL},
		{Name: "SECRXSTAT", Off: i82599.SECRXSTAT, Access: sim.RO, Read: m.readSECRXSTAT},
		rw("SECTXCTRL", 0x08800, 1, 0, 0),
		{Name: "SECTXSTAT", Off: 0x08804, Access: sim.RO, Reset: 1},
		rw("SECTXMINIFG", 0x08810, 1, 0, 0),

		// MAC.
		rw("HLREG0", i82599.HLREG0, 1, 0, i82599.Hlreg0TxCRCEn|i82599.Hlreg0RxCRCStrp|i82599.Hlreg0TxPadEn),
		{Name: "HLREG1", Off: 0x04244, Access: sim.RO},
		rw("PAP", 0x04248, 1, 0, 0),
		rw("MSCA", 0x0425C, 1, 0, 0),
		rw("MSRWD", 0x04260, 1, 0, 0),
		rw("MAXFRS", i82599.MAXFRS, 1, 0, intelnic.StdFrameFCS<<i82599.MaxfrsShift),
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
		rw("DCA_TXCTRL", l.txq(0, i82599.QDCATX), nq, intelnic.QStride, dcaTxctlReset),
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
		stat("ILLERRC", 0x04004, 1, 0),
		stat("ERRBC", 0x04008, 1, 0),
		stat("MSPDC", 0x04010, 1, 0),
		stat("MPC", l.mpc, 8, 4),
		stat("MLFC", 0x04034, 1, 0),
		stat("MRFC", 0x04038, 1, 0),
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
		stat("MNGPRC", 0x040B4, 1, 0),
		stat("MNGPDC", 0x040B8, 1, 0),
		stat("TORL", 0x040C0, 1, 0),
		stat("TORH", 0x040C4, 1, 0),
		stat("TPR", 0x040D0, 1, 0),
		stat("TPT", 0x040D4, 1, 0),
		stat("XEC", 0x04120, 1, 0),
		stat("SSVPC", 0x08780, 1, 0),
		stat("MNGPTC", 0x0CF90, 1, 0),
		stat("RXNFGPC", 0x041B0, 1, 0),
		stat("RXDGPC", 0x02F50, 1, 0),
		stat("TXDGPC", 0x087A0, 1, 0),
		stat("QPRC", i82599.QPRC(0), 16, intelnic.QStride),
		stat("QBRC_L", 0x01034, 16, intelnic.QStride),
		stat("QBRC_H", 0x01038, 16, intelnic.QStride),
		stat("QPRDC", i82599.QPRDC(0), 16, intelnic.QStride),
		stat("QPTC", i82599.QPTC(0), 16, 4),
		stat("QBTC_L", i82599.QBTC(0), 16, 8),
		stat("QBTC_H", 0x08704, 16, 8),
	}...)
}

// writeAUTOC restarts auto-negotiation on AN_RESTART.
func (m *Model) writeAUTOC(_ int, _, v uint32) {
	if v&i82599.AutocAnRestart != 0 {
		m.link.reset(m)
	}
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
