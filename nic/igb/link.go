package igb

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
)

// readLink reads the device status register.
func (p *Port) readLink() nic.Link {
	v := p.bar.Read32(intelnic.STATUS)
	l := nic.Link{Up: v&i82576.StatusLU != 0}
	if l.Up {
		switch v & i82576.StatusSpeedMask {
		case 0:
			l.SpeedMbps = 10
		case i82576.StatusSpeed100:
			l.SpeedMbps = 100
		default:
			l.SpeedMbps = 1000
		}
	}
	return l
}
