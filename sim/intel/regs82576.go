package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// PHY registers (IEEE 802.3 clause 22) behind MDIC.
const (
	bmsrStatic = 0x7949 // 10/100 capabilities, extended status, AN ability
	phyIDValue = 0x02A80390
)

// registers82576 is the 82576 table: sharedRegs, the SerDes registers (pcsRegs) and the
// registers only it has.
func (m *Model) registers82576() []sim.Reg {
	l := m.l
	nq := l.queues
	regs := append(m.sharedRegs(), m.pcsRegs()...)
	return append(regs, []sim.Reg{
		// General control.
		{Name: "CTRL", Off: intelnic.CTRL, Access: sim.RW, SelfClear: intelnic.CtrlReset | i82576.CtrlPHYRST, Write: m.writeCTRL, Read: m.readCTRL},
		{Name: "EECD", Off: i82576.EECD, Access: sim.RW, Mask: 0x4F, Reset: intelnic.EecPresent | intelnic.EecAutoRead, Read: readEEC},
		{Name: "EERD", Off: i82576.EERD, Access: sim.RW, Write: m.writeEERD},
		{Name: "MDIC", Off: i82576.MDIC, Access: sim.RW, Write: m.writeMDIC},
		rw("FCAL", 0x00028, 1, 0, 0),
		rw("FCAH", 0x0002C, 1, 0, 0),
		rw("FCT", 0x00030, 1, 0, 0),
		rw("CONNSW", 0x00034, 1, 0, 0),
		rw("VET", 0x00038, 1, 0, 0x8100),
		rw("FCTTV", 0x00170, 1, 0, 0),
		rw("LEDCTL", 0x00E00, 1, 0, 0),
		rw("PBA", 0x01000, 1, 0, 0),
		rw("GCR", 0x05B00, 1, 0, 0),
		{Name: "SWSM", Off: i82576.SWSM, Access: sim.RW, Mask: 0x3, Read: m.readSWSM},
		{Name: "FWSM", Off: 0x05B54, Access: sim.RO},
		rw("SW_FW_SYNC", 0x05B5C, 1, 0, 0),

		// Interrupts: legacy cause registers and the extended (per-vector) ones.
		{Name: "ICR", Off: i82576.ICR, Access: sim.RO, Read: m.readICR, Write: m.writeICR},
		{Name: "ICS", Off: i82576.ICS, Access: sim.WO, Write: func(_ int, _, v uint32) { m.ic.raiseMisc(v) }},
		{Name: "IMS", Off: i82576.IMS, Access: sim.RO, Read: func(int, uint32) uint32 { return m.ic.miscMask },
			Write: func(_ int, _, v uint32) { m.ic.setMask(0, v&i82576.ImsValid) }},
		{Name: "IMC", Off: i82576.IMC, Access: sim.WO, Write: func(_ int, _, v uint32) { m.ic.clearMask(0, v) },
			Read: func(int, uint32) uint32 { return m.ic.miscMask }}, // reads return IMS (8.8.10)
		rw("IAM", i82576.IAM, 1, 0, 0),
		{Name: "GPIE", Off: l.gpie, Access: sim.RW, Write: m.writeGPIE},
		{Name: "EITR", Off: l.eitr(0), N: l.vectors, Stride: 4, Access: sim.RW, Mask: 0x80007FFC},
		{Name: "IVAR0", Off: l.ivar0, N: 8, Stride: 4, Access: sim.RW, Mask: 0x9F9F9F9F},
		{Name: "IVAR_MISC", Off: l.ivarMisc, Access: sim.RW, Mask: 0x9F9F},
		rw("PBACLR", 0x05B68, 1, 0, 0),

		// Receive.
		{Name: "RCTL", Off: i82576.RCTL, Access: sim.RW, Write: m.writeRCTL},
		rw("FCRTL", 0x02160, 1, 0, 0),
		rw("FCRTH", 0x02168, 1, 0, 0),
		rw("RXPBS", i82576.RXPBS, 1, 0, 64),
		rw("RLPML", i82576.RLPML, 1, 0, 0),
		rw("RAL2", 0x054E0, 8, 8, 0),
		rw("RAH2", 0x054E4, 8, 8, 0),
		table("VFTA", i82576.VFTA, 128),
		table("UTA", i82576.UTA, 128),
		rw("VT_CTL", 0x0581C, 1, 0, 0),
		rw("VMOLR", 0x05AD0, 8, 4, 0),
		rw("PSRTYPE", 0x05480, 8, 4, 0),
		rw("RXCTL", l.rxq(0, 0x14), nq, intelnic.QStride, 0),
		stat("RQDPC", l.rxq(0, i82576.QRQDPC), nq, intelnic.QStride),
		// Linux e1000_regs.h also reaches RQDPC(0-3) at 0x02830 + 0x100·n.
		{Name: "RQDPC", Off: 0x02830, N: 4, Stride: 0x100, Access: sim.RO,
			Read: func(i int, _ uint32) uint32 {
				off := l.rxq(i, i82576.QRQDPC)
				v := m.get(off)
				m.set(off, 0)
				return v
			}},

		// Transmit.
		{Name: "TCTL", Off: i82576.TCTL, Access: sim.RW, Reset: i82576.TctlPSP | 0x0F<<4, Doorbell: func(int, uint32) { m.transmitAll() }},
		rw("TCTL_EXT", 0x00404, 1, 0, 0),
		rw("TIPG", 0x00410, 1, 0, 0),
		rw("TXPBS", 0x03404, 1, 0, 40),
		rw("DTXCTL", 0x03590, 1, 0, 0),
		rw("DCA_TXCTRL", l.txq(0, i82576.QDCATX), nq, intelnic.QStride, dcaTxctlReset),

		// Statistics (read to clear).
		stat("ALGNERRC", 0x04004, 1, 0),
		stat("SYMERRS", 0x04008, 1, 0),
		stat("RXERRC", 0x0400C, 1, 0),
		stat("MPC", l.mpc, 1, 0),
		stat("SCC..COLC", 0x04014, 6, 4),
		stat("DC", 0x04030, 1, 0),
		stat("TNCRS", 0x04034, 1, 0),
		stat("SEC", 0x04038, 1, 0),
		stat("CEXTERR", 0x0403C, 1, 0),
		stat("XONRXC..FCRUC", 0x04048, 5, 4),
		stat("RNBC", 0x040A0, 1, 0),
		stat("MGTPRC..MGTPTC", 0x040B4, 3, 4),
		stat("TORL..TPT", 0x040C0, 6, 4),
		stat("TSCTC", 0x040F8, 1, 0),
		stat("TSCTFC", 0x040FC, 1, 0),
		stat("IAC..ICRXDMTC", 0x04100, 10, 4),
		stat("PQGPRC", i82576.PQGPRC, nq, i82576.PQStride),
		stat("PQGPTC", i82576.PQGPTC, nq, i82576.PQStride),
		stat("PQGORC", i82576.PQGORC, nq, i82576.PQStride),
		stat("PQGOTC", i82576.PQGOTC, nq, i82576.PQStride),
		stat("PQMPRC", i82576.PQMPRC, nq, i82576.PQStride),
	}...)
}

// readICR implements the 82576 ICR read: it returns the causes (with INT_ASSERTED in
// legacy mode) and clears them unless MSI-X is active with unmasked causes, then
// auto-masks IAM's causes.
func (m *Model) readICR(int, uint32) uint32 {
	ic := &m.ic
	v := ic.misc
	asserted := !ic.msix() && ic.misc&ic.miscMask != 0
	if asserted {
		v |= i82576.IcrAsserted
	}
	gpie := m.get(m.l.gpie)
	if gpie&i82576.GpieNSICR != 0 || ic.miscMask == 0 || asserted || !m.dev.MSIXEnabled() {
		ic.misc = 0
	}
	if gpie&i82576.GpieNSICR != 0 || (ic.miscMask != 0 && asserted) {
		ic.miscMask &^= m.get(i82576.IAM)
	}
	ic.updateINTx()
	return v
}

func (m *Model) writeICR(_ int, _, v uint32) {
	m.ic.misc &^= v
	m.ic.updateINTx()
}

// writeGPIE is the 82576's GPIE. Switching MSI-X mode on or off drops the interrupt
// vector allocation (IVAR, IVAR_MISC): entries written before it do not stick, which is
// why Linux's igb_configure_msix sets GPIE first ("Turn on MSI-X capability first, or our
// settings won't stick"). A strict model reports entries lost that way.
func (m *Model) writeGPIE(_ int, old, v uint32) {
	if (old^v)&intelnic.GpieMSIXMode != 0 {
		var lost bool
		for i := uint32(0); i <= 8; i++ { // IVAR0-7, then IVAR_MISC
			off := m.l.ivar0 + 4*i
			if i == 8 {
				off = m.l.ivarMisc
			}
			lost = lost || m.get(off)&0x80808080 != 0
			m.set(off, 0)
		}
		if lost {
			m.protocol("GPIE.MSIX_MODE changed after IVAR was programmed: the vector allocation is lost (set GPIE first)")
		}
	}
	m.ic.updateINTx()
}

// writeRCTL: turning RX off discards the packet buffer's frames.
func (m *Model) writeRCTL(_ int, _, v uint32) {
	if v&i82576.RctlEN == 0 {
		m.fifo.clear()
	}
}

// writeMDIC performs a PHY register access; the result appears with READY.
func (m *Model) writeMDIC(_ int, _, v uint32) {
	reg := v >> 16 & 0x1F
	phyAddr := v >> 21 & 0x1F
	data := v & 0xFFFF
	res := v &^ (i82576.MdicReady | i82576.MdicError)
	switch {
	case phyAddr != 1:
		res |= i82576.MdicError
	case v&(3<<26) == i82576.MdicOpRead:
		val, ok := m.phyRead(reg)
		if !ok {
			res |= i82576.MdicError
		}
		res = res&^0xFFFF | uint32(val)
	case v&(3<<26) == i82576.MdicOpWrite:
		if !m.phyWrite(reg, uint16(data)) {
			res |= i82576.MdicError
		}
	default:
		res |= i82576.MdicError
	}
	m.set(i82576.MDIC, res|i82576.MdicReady)
	if v&i82576.MdicIntEn != 0 {
		m.ic.raiseMisc(1 << 9) // MDAC
	}
}

func (m *Model) phyRead(reg uint32) (uint16, bool) {
	up := m.link.up
	switch reg {
	case i82576.PHYBMCR:
		return m.phy.bmcr, true
	case i82576.PHYBMSR:
		v := uint16(bmsrStatic)
		if up {
			v |= i82576.BmsrLinkUp | i82576.BmsrANDone
		}
		return v, true
	case i82576.PHYID1:
		return phyIDValue >> 16, true
	case i82576.PHYID2:
		return phyIDValue & 0xFFFF, true
	case i82576.PHYANAR:
		return m.phy.anar, true
	case i82576.PHYANLPAR:
		return whileUp(up, 0x45E1), true
	case i82576.PHYGCR:
		return m.phy.gcr, true
	case i82576.PHYGSR:
		return whileUp(up, 0x3C00), true
	}
	if reg < 32 {
		return m.phy.other[reg], true
	}
	return 0, false
}

// whileUp is a PHY status register's value v while the link is up, 0 while it is down.
func whileUp(up bool, v uint16) uint16 {
	if up {
		return v
	}
	return 0
}

func (m *Model) phyWrite(reg uint32, v uint16) bool {
	switch reg {
	case i82576.PHYBMCR:
		poweredUp := m.phy.bmcr&i82576.BmcrPowerDown != 0 && v&i82576.BmcrPowerDown == 0
		m.phy.bmcr = v &^ (i82576.BmcrReset | i82576.BmcrANRestart)
		if v&(i82576.BmcrReset|i82576.BmcrANRestart) != 0 || poweredUp {
			m.link.reset(m) // auto-negotiation restarts (also when the PHY powers up)
		} else {
			m.updateLink() // powered down: the link goes
		}
	case i82576.PHYANAR:
		m.phy.anar = v
	case i82576.PHYGCR:
		m.phy.gcr = v
	case i82576.PHYBMSR, i82576.PHYID1, i82576.PHYID2, i82576.PHYANLPAR, i82576.PHYGSR:
		// read-only
	default:
		if reg >= 32 {
			return false
		}
		m.phy.other[reg] = v
	}
	return true
}

// phyState is the 82576's PHY behind MDIC.
type phyState struct {
	bmcr, anar, gcr uint16
	other           [32]uint16
}

// reset puts the PHY's registers back to their defaults, except BMCR's power-down bit:
// the PHY keeps it across a MAC or PHY reset (Linux's igb_power_up_link resets the PHY and
// then clears the bit itself; igb_power_up_phy_copper: "The PHY will retain its settings
// across a power down/up cycle").
func (p *phyState) reset() {
	*p = phyState{bmcr: i82576.BmcrANEnable | 1<<8 | 1<<6 | p.bmcr&i82576.BmcrPowerDown, anar: 0x01E1, gcr: 0x0300}
}
