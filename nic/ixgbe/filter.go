package ixgbe

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/pci"
)

// multicastMode is the 82599's multicast control (intel.Layout.Multicast): the 4096-bit
// multicast table on with filter type 0 (MCSTCTRL: MFE, MO 0, address bits 47:36), and
// FCTRL.MPE (every multicast frame) as mpe says.
func multicastMode(r pci.Region, mpe bool) {
	r.Write32(i82599.MCSTCTRL, r.Read32(i82599.MCSTCTRL)&^i82599.McstctrlMOMask|i82599.McstctrlMFE)
	fctrl := r.Read32(i82599.FCTRL)
	if mpe {
		fctrl |= i82599.FctrlMPE
	} else {
		fctrl &^= i82599.FctrlMPE
	}
	r.Write32(i82599.FCTRL, fctrl)
}
