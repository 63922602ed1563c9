package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// The 82576's SerDes ports (fiber and backplane device ids) reach the link partner through
// the PCS, not the copper PHY behind MDIC: their EEPROM loads the SerDes link mode into
// CTRL_EXT, and the link comes up only once the driver has enabled the PCS
// (PCS_CFG0.PCS_EN), powered the SFP cage's laser (CTRL_EXT.SDP3 low: the model's cage
// powers up with TX_DISABLE high), set CTRL.SLU and either restarted clause 37
// auto-negotiation (PCS_LCTL.AN_ENABLE with AN_RESTART, done Timing.Autoneg later) or
// forced 1000/full (PCS_LCTL.FSD with FSV_1000 and FDV_FULL). PCS_LCTL powers up 0: the
// model's EEPROM leaves the PCS to the driver. The copper PHY still answers MDIC, but its
// auto-negotiation brings no link on these ports.

// serdesID reports whether an 82576 device id is a SerDes (fiber or backplane) part.
func serdesID(id uint16) bool {
	switch id {
	case i82576.DeviceFiber, i82576.DeviceSerDes, i82576.DeviceNSSerDes, i82576.DeviceSerDesQuad:
		return true
	}
	return false
}

// ctrlExtReset is CTRL_EXT after reset: on an 82576 SerDes part the EEPROM's SerDes link
// mode with SDP3 (the cage's TX_DISABLE) high.
func (m *Model) ctrlExtReset() uint32 {
	if m.cfg.Flavor == X82576 && serdesID(m.cfg.DeviceID) {
		return i82576.CtrlExtLinkSerDes | i82576.CtrlExtSDP3Data
	}
	return 0
}

// serdes reports whether the 82576 runs its SerDes link mode. The lock is held.
func (m *Model) serdes() bool {
	if m.cfg.Flavor != X82576 {
		return false
	}
	mode := m.get(intelnic.CTRLEXT) & i82576.CtrlExtLinkModeMask
	return mode == i82576.CtrlExtLinkSerDes || mode == i82576.CtrlExtLink1000BaseKX
}

// linkPowered reports whether the link path is powered and set up: the 82599 SFP+ laser
// on (ESDP.SDP3 low), the 82576 copper PHY not powered down, or its SerDes PCS set up as
// the comment above says. The lock is held.
func (m *Model) linkPowered() bool {
	if m.cfg.Flavor != X82576 {
		return !sfpID(m.cfg.DeviceID) || m.get(i82599.ESDP)&i82599.EsdpSDP3 == 0 // the SFP+ laser
	}
	if !m.serdes() {
		return m.phy.bmcr&i82576.BmcrPowerDown == 0
	}
	if m.get(i82576.PCSCFG0)&i82576.PcsCfgPCSEn == 0 || m.get(intelnic.CTRLEXT)&i82576.CtrlExtSDP3Data != 0 ||
		m.get(intelnic.CTRL)&i82576.CtrlSLU == 0 {
		return false
	}
	lctl := m.get(i82576.PCSLCTL)
	const forced = i82576.PcsLctlFSD | i82576.PcsLctlFSV1000 | i82576.PcsLctlFDVFull
	return lctl&i82576.PcsLctlANEnable != 0 || lctl&forced == forced
}

// pcsRegs are the 82576's SerDes registers.
func (m *Model) pcsRegs() []sim.Reg {
	return []sim.Reg{
		rw("SCTL", i82576.SCTL, 1, 0, 0),
		{Name: "PCS_CFG0", Off: i82576.PCSCFG0, Access: sim.RW, Reset: i82576.PcsCfgPCSEn, Write: m.writeLinkReg},
		{Name: "PCS_LCTL", Off: i82576.PCSLCTL, Access: sim.RW, SelfClear: i82576.PcsLctlANRestart, Write: m.writePCSLCTL},
		{Name: "PCS_LSTS", Off: i82576.PCSLSTS, Access: sim.RO, Read: m.readPCSLSTS},
		rw("PCS_ANADV", i82576.PCSANADV, 1, 0, 0),
		// The PHY configuration is loaded for both ports (CFG_DONE0 and 1).
		{Name: "EEMNGCTL", Off: i82576.EEMNGCTL, Access: sim.RO, Reset: 3 << 18},
	}
}

// writeLinkReg: a register the link depends on changed.
func (m *Model) writeLinkReg(int, uint32, uint32) { m.updateLink() }

// writePCSLCTL restarts PCS auto-negotiation on AN_RESTART.
func (m *Model) writePCSLCTL(_ int, _, v uint32) {
	if v&i82576.PcsLctlANRestart != 0 && m.serdes() {
		m.link.reset(m)
		return
	}
	m.updateLink()
}

// readPCSLSTS reports the SerDes link: up, in sync, 1000/full (and auto-negotiation
// complete when it ran).
func (m *Model) readPCSLSTS(int, uint32) uint32 {
	if !m.serdes() || !m.link.up {
		return 0
	}
	v := uint32(i82576.PcsLstsLinkOK | i82576.PcsLstsSyncOK | i82576.PcsLstsSpeed1000 | i82576.PcsLstsDuplexFull)
	if m.get(i82576.PCSLCTL)&i82576.PcsLctlANEnable != 0 {
		v |= i82576.PcsLstsANComplete
	}
	return v
}
