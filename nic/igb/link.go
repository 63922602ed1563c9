package igb

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// media is how the port reaches its link partner, from the link mode the EEPROM loads
// into CTRL_EXT: Linux's igb_get_invariants_82575 reads it there, not from the device id.
type media int

const (
	mediaCopper media = iota // the internal copper PHY, behind MDIC
	mediaSerDes              // the internal SerDes (fiber, backplane) through the PCS
)

// readMedia reads the port's link mode. SGMII (an external PHY reached over I2C or MDIO)
// is refused: nothing here drives that PHY. The SerDes mode is taken as internal SerDes,
// which is also what Linux falls back to when it cannot read an SFP module's EEPROM.
func (p *Port) readMedia() error {
	switch mode := p.bar().Read32(intelnic.CTRLEXT) & i82576.CtrlExtLinkModeMask; mode {
	case i82576.CtrlExtLinkCopper:
		p.media = mediaCopper
	case i82576.CtrlExtLinkSerDes, i82576.CtrlExtLink1000BaseKX:
		p.media, p.forcedPCS = mediaSerDes, mode == i82576.CtrlExtLink1000BaseKX
	default:
		return fmt.Errorf("link setup: CTRL_EXT link mode SGMII (an external PHY) is not supported")
	}
	return nil
}

// phyResetDelay is how long CTRL.PHY_RST is held, and phyCfgTimeout how long the PHY may
// take to load its configuration afterwards (Linux igb_phy_hw_reset: reset_delay_us 100,
// then 150 µs; igb_get_cfg_done_82575 polls EEMNGCTL up to 100 ms and goes on without it).
const (
	phyResetDelay = 100 * time.Microsecond
	phyCfgTimeout = 100 * time.Millisecond
)

// cfgDone returns the EEMNGCTL bit that says this port's PHY configuration is loaded.
func cfgDone(function uint8) uint32 { return 1 << (18 + uint32(function&1)) }

// powerUpLink resets the PHY and powers the link up, as Linux's igb_power_up_link does:
// a port handed over by a driver that downed it (Linux powers the PHY down, or turns the
// SerDes PCS and the SFP laser off, when an interface goes down) has no link until then.
// Copper: CTRL.PHY_RST, then BMCR's power-down bit cleared (the PHY keeps it across its
// reset). SerDes: PCS enabled and the laser on (CTRL_EXT.SDP3 low).
func (p *Port) powerUpLink() error {
	r := p.bar()
	if p.media == mediaSerDes {
		r.Write32(i82576.PCSCFG0, r.Read32(i82576.PCSCFG0)|i82576.PcsCfgPCSEn)
		r.Write32(intelnic.CTRLEXT, r.Read32(intelnic.CTRLEXT)&^i82576.CtrlExtSDP3Data)
		r.Read32(intelnic.STATUS) // flush
		time.Sleep(time.Millisecond)
		return nil
	}
	ctrl := r.Read32(intelnic.CTRL) &^ i82576.CtrlPHYRST
	r.Write32(intelnic.CTRL, ctrl|i82576.CtrlPHYRST)
	r.Read32(intelnic.STATUS)
	time.Sleep(phyResetDelay)
	r.Write32(intelnic.CTRL, ctrl)
	r.Read32(intelnic.STATUS)
	time.Sleep(150 * time.Microsecond)
	_ = intel.WaitSet(r, i82576.EEMNGCTL, cfgDone(p.Device().Addr().Function), phyCfgTimeout)
	bmcr, err := p.readPHY(i82576.PHYBMCR)
	if err != nil {
		return err
	}
	if bmcr&i82576.BmcrPowerDown != 0 {
		return p.writePHY(i82576.PHYBMCR, bmcr&^i82576.BmcrPowerDown)
	}
	return nil
}

// startLink brings the link up on the port's media; intel.WaitLink then waits for it.
//
// Copper: the MAC follows the PHY (link up, no forced speed) and the PHY restarts
// auto-negotiation. SerDes (Linux igb_setup_serdes_link_82575): loopback off, the SFP cage
// powered, CTRL.SLU with both software pins set and the MAC forced to 1000/full, energy
// detect from the SerDes, then the PCS: clause 37 auto-negotiation restarted, or on a
// 1000BASE-KX port forced 1000/full (parallel detect).
func (p *Port) startLink() error {
	r := p.bar()
	if p.media == mediaSerDes {
		r.Write32(i82576.SCTL, i82576.SctlDisableSerDesLoopback)
		r.Write32(intelnic.CTRLEXT, r.Read32(intelnic.CTRLEXT)&^i82576.CtrlExtSDP3Data|i82576.CtrlExtI2CEna)
		ctrl := r.Read32(intelnic.CTRL) | i82576.CtrlSLU | i82576.CtrlSWDPIN0 | i82576.CtrlSWDPIN1
		r.Write32(intelnic.CTRL, ctrl|i82576.CtrlSpd1000|i82576.CtrlFrcSpd|i82576.CtrlFD|i82576.CtrlFrcDpx)
		r.Write32(i82576.CONNSW, r.Read32(i82576.CONNSW)|i82576.ConnswEnrgsrc)
		lctl := r.Read32(i82576.PCSLCTL) | i82576.PcsLctlFSV1000 | i82576.PcsLctlFDVFull
		lctl &^= i82576.PcsLctlANEnable | i82576.PcsLctlFLVLinkUp | i82576.PcsLctlFSD | i82576.PcsLctlForceLink
		if p.forcedPCS {
			lctl |= i82576.PcsLctlFSD | i82576.PcsLctlForceFC
		} else {
			lctl = lctl&^i82576.PcsLctlForceFC | i82576.PcsLctlANEnable | i82576.PcsLctlANRestart
		}
		r.Write32(i82576.PCSLCTL, lctl)
		return nil
	}
	r.Write32(intelnic.CTRL, r.Read32(intelnic.CTRL)&^(i82576.CtrlFrcSpd|i82576.CtrlFrcDpx)|i82576.CtrlSLU)
	bmcr, err := p.readPHY(i82576.PHYBMCR)
	if err != nil {
		return err
	}
	return p.writePHY(i82576.PHYBMCR, bmcr&^i82576.BmcrPowerDown|i82576.BmcrANEnable|i82576.BmcrANRestart)
}

// pcsLinkUp is the PCS's link: link OK and in sync (Linux
// igb_get_pcs_speed_and_duplex_82575; STATUS is not accurate on a SerDes port).
const pcsLinkUp = i82576.PcsLstsLinkOK | i82576.PcsLstsSyncOK

// readLink reads the link state: the device status register, or on a SerDes port the PCS
// link status.
func (p *Port) readLink() nic.Link {
	if p.media == mediaSerDes {
		v := p.bar().Read32(i82576.PCSLSTS)
		l := nic.Link{Up: v&pcsLinkUp == pcsLinkUp}
		switch {
		case !l.Up:
		case v&i82576.PcsLstsSpeed1000 != 0:
			l.SpeedMbps = 1000
		case v&i82576.PcsLstsSpeed100 != 0:
			l.SpeedMbps = 100
		default:
			l.SpeedMbps = 10
		}
		return l
	}
	return intel.Link82576(p.bar().Read32(intelnic.STATUS))
}
