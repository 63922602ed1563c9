package ixgbe

import "github.com/uiod/uiod/nic"

// readLink reads the link status register.
func (p *Port) readLink() nic.Link {
	v := p.bar.Read32(regLINKS)
	l := nic.Link{Up: v&linksUp != 0}
	if l.Up {
		switch v & linksSpeedMask {
		case linksSpeed10G:
			l.SpeedMbps = 10000
		case linksSpeed1G:
			l.SpeedMbps = 1000
		case linksSpeed100M:
			l.SpeedMbps = 100
		}
	}
	return l
}
