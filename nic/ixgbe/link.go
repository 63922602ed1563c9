package ixgbe

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic"
)

// lmsFor is the set of link modes each media type is brought up in, the way Linux's
// ixgbe_get_link_capabilities_82599 and ixgbe_setup_mac_link_82599 read them: an SFP+
// cage runs 10G serial or a 1 GbE mode, a backplane auto-negotiates KX4/KX/KR (or runs
// a fixed 1G/10G mode), CX4 runs 10 GbE XAUI. LMS 5 is reserved everywhere.
var lmsFor = map[media]uint8{
	mediaFiber:     1<<i82599.LMS10GSerial | 1<<i82599.LMS1GNoAN | 1<<i82599.LMS1GAN,
	mediaBackplane: 1<<i82599.LMS1GNoAN | 1<<i82599.LMS10GNoAN | 1<<i82599.LMS1GAN | 1<<i82599.LMSKX4KXKR | 1<<i82599.LMSKX4KXKR1GAN | 1<<i82599.LMSKX4KXKRSGM,
	mediaCX4:       1 << i82599.LMS10GNoAN,
}

// setupLink keeps the link mode the EEPROM loaded into AUTOC at reset and restarts
// auto-negotiation with it, as Linux does (ixgbe_reset_hw_82599 keeps the EEPROM's AUTOC
// as orig_autoc, ixgbe_setup_mac_link_82599 uses its LMS and ixgbe_reset_pipeline_82599
// writes it back with AN_RESTART), after turning an SFP+ port's laser on. A link mode
// the port's media cannot run is refused: nothing this driver does would bring that link
// up.
func (p *Port) setupLink() error {
	r := p.bar()
	autoc := r.Read32(i82599.AUTOC)
	lms := uint8(autoc & i82599.AutocLMSMask >> i82599.AutocLMSShift)
	if lmsFor[p.id.media]&(1<<lms) == 0 {
		return fmt.Errorf("link setup: %s (%s media): EEPROM link mode AUTOC.LMS=%d is not one this driver brings up on %s", p.id.name, p.id.media, lms, p.id.media)
	}
	if p.id.media == mediaFiber {
		// The SFP+ laser on: Linux turns it off (ESDP.SDP3, TX_DISABLE) when an
		// interface goes down and on again when it comes up
		// (ixgbe_disable_tx_laser_multispeed_fiber, ..._enable_...).
		r.Write32(i82599.ESDP, r.Read32(i82599.ESDP)&^i82599.EsdpSDP3)
	}
	r.Write32(i82599.AUTOC, autoc|i82599.AutocAnRestart)
	return nil
}

// readLink reads the link status register.
func (p *Port) readLink() nic.Link {
	v := p.bar().Read32(i82599.LINKS)
	l := nic.Link{Up: v&i82599.LinksUp != 0}
	if l.Up {
		switch v & i82599.LinksSpeedMask {
		case i82599.LinksSpeed10G:
			l.SpeedMbps = 10000
		case i82599.LinksSpeed1G:
			l.SpeedMbps = 1000
		case i82599.LinksSpeed100M:
			l.SpeedMbps = 100
		}
	}
	return l
}
