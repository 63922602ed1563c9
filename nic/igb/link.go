package igb

import "github.com/uiod/uiod/nic"

// readLink reads the device status register.
func (p *Port) readLink() nic.Link {
	v := p.bar.Read32(regSTATUS)
	l := nic.Link{Up: v&statusLU != 0}
	if l.Up {
		switch v & statusSpeedMask {
		case 0:
			l.SpeedMbps = 10
		case statusSpeed100:
			l.SpeedMbps = 100
		default:
			l.SpeedMbps = 1000
		}
	}
	return l
}
