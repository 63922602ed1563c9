package ixgbe

import (
	"net"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

var _ nic.RxFilter = (*Port)(nil)

// SetMAC implements nic.RxFilter: mac goes into receive address 0 (RAL/RAH, valid),
// where the station address is read from at open; MAC returns it from then on. It may
// be called while the queues run.
func (p *Port) SetMAC(mac net.HardwareAddr) error { return intel.SetMAC(&p.core, mac) }

// SetMulticast implements nic.RxFilter: the groups are hashed into the 4096-bit
// multicast table (filter type 0: address bits 47:36; MCSTCTRL.MFE on), so any number of
// them is taken, and a frame to a group sharing those 12 bits with one of them passes
// too. all sets FCTRL.MPE (every multicast frame), as a promiscuous port has it anyway.
// It may be called while the queues run.
func (p *Port) SetMulticast(groups []net.HardwareAddr, all bool) error {
	return intel.SetMulticast(&p.core, groups, all, func(mpe bool) {
		r := p.bar()
		r.Write32(i82599.MCSTCTRL, r.Read32(i82599.MCSTCTRL)&^i82599.McstctrlMOMask|i82599.McstctrlMFE)
		fctrl := r.Read32(i82599.FCTRL)
		if mpe {
			fctrl |= i82599.FctrlMPE
		} else {
			fctrl &^= i82599.FctrlMPE
		}
		r.Write32(i82599.FCTRL, fctrl)
	})
}
