package igb

import (
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// readLink reads the device status register.
func (p *Port) readLink() nic.Link { return intel.Link82576(p.bar.Read32(intelnic.STATUS)) }
