package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
)

// Link82576 decodes the link of an 82576 STATUS register (a VF's VTSTATUS has the same
// bits).
func Link82576(status uint32) nic.Link {
	l := nic.Link{Up: status&i82576.StatusLU != 0}
	if l.Up {
		switch status & i82576.StatusSpeedMask {
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
