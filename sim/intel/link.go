package intel

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/wire"
)

// linkState is the port's link. It is up when a wire is plugged in, no fault injection
// holds it down, auto-negotiation (Timing.Autoneg) after the last reset or AN restart
// has finished, (82599) AUTOC's link mode suits the port's media and the link path is
// powered and set up (linkPowered: the SFP+ laser, the 82576's PHY or SerDes PCS).
// Guarded by the device lock.
type linkState struct {
	plugged bool
	wanted  bool // false while fault injection holds the link down
	up      bool
	readyAt int64
	// partner1G: the link partner takes 1 Gb/s only (SetLinkSpeed), so an 82599 link
	// mode that would run at 10 Gb/s comes up at 1 Gb/s.
	partner1G bool
	timer     *time.Timer
}

func (l *linkState) stopTimer() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// reset restarts auto-negotiation.
func (l *linkState) reset(m *Model) {
	l.stopTimer()
	l.up = false
	l.readyAt = 0
	if d := m.timing.Autoneg; d > 0 {
		l.readyAt = wire.Now() + int64(d)
		l.timer = time.AfterFunc(d, func() {
			m.dev.Lock()
			defer m.dev.Unlock()
			if !m.closing {
				m.updateLink()
			}
		})
	}
	m.updateLink()
}

// updateLink recomputes the link and raises LSC when it changed. The lock is held.
func (m *Model) updateLink() {
	l := &m.link
	up := l.plugged && l.wanted && wire.Now() >= l.readyAt && m.lmsValid() && m.linkPowered()
	if up == l.up {
		return
	}
	l.up = up
	if up {
		m.tsLinkUp()
	}
	m.st.LinkChanges++
	if m.cfg.Flavor == X82576 {
		m.ic.raiseMisc(i82576.IcrLSC)
	} else {
		m.ic.raiseMisc(i82599.EicrLSC)
	}
}

// AUTOC link mode select (82599), Linux ixgbe_type.h IXGBE_AUTOC_LMS_*.
const (
	// autocReset is AUTOC after reset with the SFP+ port's EEPROM link mode.
	autocReset = 0xC09C6004
)

// media is a port's media: the link mode its EEPROM loads into AUTOC, and the link
// modes a link comes up in.
type media struct {
	lms   uint32
	valid uint8 // bit n: LMS n brings the link up
}

// mediaFor returns the media of an 82599 device id (Linux ixgbe_82599.c
// ixgbe_get_media_type_82599): SFP+ ports take 10G serial (or 1G without AN), backplane
// ports the KX4/KX/KR modes, CX4 and XAUI ports the parallel 10G mode. Device ids not
// listed accept any mode.
func mediaFor(id uint16) media {
	if sfpID(id) {
		return media{i82599.LMS10GSerial, 1<<i82599.LMS10GSerial | 1<<i82599.LMS1GNoAN}
	}
	switch id {
	case i82599.DeviceKX4, i82599.DeviceComboBackplane, i82599.DeviceKX4Mezz, i82599.DeviceBackplaneFCoE:
		return media{i82599.LMSKX4KXKR, 1<<i82599.LMS10GNoAN | 1<<i82599.LMS1GAN | 1<<i82599.LMSKX4KXKR | 1<<i82599.LMSKX4KXKR1GAN | 1<<i82599.LMSKX4KXKRSGM}
	case i82599.DeviceKR:
		return media{i82599.LMSKX4KXKR, 1<<i82599.LMS1GAN | 1<<i82599.LMSKX4KXKR | 1<<i82599.LMSKX4KXKR1GAN}
	case i82599.DeviceXAUILOM: // backplane media, the EEPROM selects parallel 10G
		return media{i82599.LMS10GNoAN, 1<<i82599.LMS10GNoAN | 1<<i82599.LMSKX4KXKR | 1<<i82599.LMSKX4KXKR1GAN}
	case i82599.DeviceCX4:
		return media{i82599.LMS10GNoAN, 1 << i82599.LMS10GNoAN}
	}
	return media{i82599.LMS10GSerial, 0xFF}
}

// sfpID reports whether an 82599 device id is an SFP+ port.
func sfpID(id uint16) bool {
	switch id {
	case i82599.DeviceSFP, i82599.DeviceSFPEM, i82599.DeviceSFPFCoE, i82599.DeviceSFPSF2, i82599.DeviceSFPSFQP, i82599.DeviceENSFP:
		return true
	}
	return false
}

// esdpReset is ESDP at power-on: an SFP+ port handed over with its laser off
// (Config.PoweredDown) has SDP3, the module's TX_DISABLE, high.
func (m *Model) esdpReset() uint32 {
	if m.cfg.Flavor == X82599 && m.cfg.PoweredDown && sfpID(m.cfg.DeviceID) {
		return i82599.EsdpSDP3
	}
	return 0
}

// lmsValid reports whether the 82599's AUTOC link mode brings up a link on its media.
// The lock is held.
func (m *Model) lmsValid() bool {
	if m.cfg.Flavor != X82599 {
		return true
	}
	lms := m.get(i82599.AUTOC) & i82599.AutocLMSMask >> i82599.AutocLMSShift
	return mediaFor(m.cfg.DeviceID).valid&(1<<lms) != 0
}

// readLINKS reports the 82599's link: up, with the speed of AUTOC's link mode (the 1 GbE
// modes and SGMII run at 1 Gb/s, the others at 10 Gb/s: the model's link partner takes
// every speed).
func (m *Model) readLINKS(int, uint32) uint32 {
	if !m.link.up {
		return 0
	}
	return i82599.LinksUp | m.linksSpeed() | i82599.LinksStatus
}

// linksSpeed is the LINKS speed field the 82599's link runs at when it is up. The lock
// is held.
func (m *Model) linksSpeed() uint32 {
	if m.link.partner1G {
		return i82599.LinksSpeed1G
	}
	switch m.get(i82599.AUTOC) & i82599.AutocLMSMask >> i82599.AutocLMSShift {
	case i82599.LMS1GNoAN, i82599.LMS1GAN, i82599.LMSKX4KXKRSGM:
		return i82599.LinksSpeed1G
	}
	return i82599.LinksSpeed10G
}

func (m *Model) readSTATUS(_ int, v uint32) uint32 {
	v &^= intelnic.StatusGIOMaster | i82576.StatusLU | i82576.StatusFD | i82576.StatusSpeed1000
	if m.dev.BusMaster() && m.get(0)&intelnic.CtrlGIODisable == 0 {
		v |= intelnic.StatusGIOMaster
	}
	if m.cfg.Flavor == X82576 && m.link.up {
		v |= i82576.StatusLU | i82576.StatusFD | i82576.StatusSpeed1000
	}
	return v
}

// SetLink forces the link down (false) or lets it come up again (true), raising LSC on
// every change.
func (m *Model) SetLink(up bool) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.link.wanted = up
	m.updateLink()
}

// SetLinkSpeed makes the 82599's link partner take only 1 Gb/s (mbps 1000) or every
// speed (0), and renegotiates: a link that is up goes down and comes up at the new
// speed, raising LSC twice.
func (m *Model) SetLinkSpeed(mbps int) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.link.partner1G = mbps == 1000
	if m.link.up {
		wanted := m.link.wanted
		m.link.wanted = false
		m.updateLink()
		m.link.wanted = wanted
		m.updateLink()
	}
}

// Link reports whether the link is up.
func (m *Model) Link() bool {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.link.up
}

// FlapLink takes the link down and brings it back after downFor (at once when downFor is
// 0), raising LSC twice.
func (m *Model) FlapLink(downFor time.Duration) {
	m.SetLink(false)
	if downFor <= 0 {
		m.SetLink(true)
		return
	}
	time.AfterFunc(downFor, func() { m.SetLink(true) })
}
