package igb

import (
	"net"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

var _ nic.RxFilter = (*Port)(nil)

// SetMAC implements nic.RxFilter: mac goes into receive address 0 (RAL/RAH, valid),
// where the station address is read from at open; MAC returns it from then on. It may
// be called while the queues run.
func (p *Port) SetMAC(mac net.HardwareAddr) error { return intel.SetMAC(&p.core, mac) }

// SetMulticast implements nic.RxFilter: the groups are hashed into the 4096-bit
// multicast table (RCTL.MO 0: address bits 47:36), so any number of them is taken, and
// a frame to a group sharing those 12 bits with one of them passes too. all sets
// RCTL.MPE (every multicast frame), as a promiscuous port has it anyway. It may be
// called while the queues run.
func (p *Port) SetMulticast(groups []net.HardwareAddr, all bool) error {
	return intel.SetMulticast(&p.core, groups, all, func(mpe bool) {
		r := p.bar()
		rctl := r.Read32(i82576.RCTL) &^ (i82576.RctlMOMask | i82576.RctlMPE)
		if mpe {
			rctl |= i82576.RctlMPE
		}
		r.Write32(i82576.RCTL, rctl)
	})
}
