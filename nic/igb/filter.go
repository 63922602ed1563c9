package igb

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/pci"
)

// multicastMode is the 82576's multicast control (intel.Layout.Multicast): the 4096-bit
// multicast table hashed with filter type 0 (RCTL.MO 0: address bits 47:36), and
// RCTL.MPE (every multicast frame) as mpe says.
func multicastMode(r pci.Region, mpe bool) {
	rctl := r.Read32(i82576.RCTL) &^ (i82576.RctlMOMask | i82576.RctlMPE)
	if mpe {
		rctl |= i82576.RctlMPE
	}
	r.Write32(i82576.RCTL, rctl)
}
