package intel

import (
	"net"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic/internal/mcast"
)

// The receive filter (nic.RxFilter) of the 82599 and the 82576 (docs/design.md, "Receive
// filter"): the station address in receive address 0, multicast groups in the 4096-bit
// multicast table array (MTA), every multicast frame with the multicast promiscuous bit
// (FCTRL.MPE on the 82599, RCTL.MPE on the 82576). The table is hashed with filter type 0
// (MO = 0: address bits 47:36, Linux's default mc_filter_type), so it takes any number of
// groups, and a group sharing its 12 bits with another lets that one in too.

// MTAVector is the multicast table bit of group addr with filter type 0: bits 47:36 of
// the address (ixgbe_mta_vector and igb_hash_mc_addr with mc_filter_type 0). The bit is
// bit vector&31 of MTA register vector>>5.
func MTAVector(addr net.HardwareAddr) uint32 {
	return (uint32(addr[4])>>4 | uint32(addr[5])<<4) & 0xFFF
}

// SetMAC makes mac the station address in receive address 0 (RAL, then RAH with the valid
// bit; RAH's other bits, the pool selection, are kept), as Linux's ixgbe_set_rar and
// igb_rar_set write it. A frame arriving between the two writes may meet neither address.
func SetMAC(p *Port, mac net.HardwareAddr) error {
	if err := mcast.CheckMAC(mac); err != nil {
		return err
	}
	m := append(net.HardwareAddr(nil), mac...)
	return p.locked(func() {
		r := p.bar
		r.Write32(intelnic.RAL0, uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24)
		hi := r.Read32(intelnic.RAH0) &^ 0xFFFF
		r.Write32(intelnic.RAH0, hi|uint32(m[4])|uint32(m[5])<<8|intelnic.RahAV)
		p.mac.Store(&m)
	})
}

// SetMulticast fills the multicast table with groups and has Layout.Multicast write the
// controller's multicast control (filter type 0, table enabled, MPE when every multicast
// frame is to be taken: all, or the port is promiscuous).
// Each table register is written once with its final value, so a group in both the old
// and the new list is never dropped meanwhile; when all is set MPE goes on before the
// table changes, and off only after it.
func SetMulticast(p *Port, groups []net.HardwareAddr, all bool) error {
	if err := mcast.CheckGroups(groups); err != nil {
		return err
	}
	var mta [tableEntries]uint32
	for _, g := range groups {
		v := MTAVector(g)
		mta[v>>5] |= 1 << (v & 31)
	}
	mpe := all || p.cfg.Promiscuous
	return p.locked(func() {
		if mpe {
			p.layout.Multicast(p.bar, true)
		}
		for i, w := range mta {
			if off := intelnic.MTA + 4*uint32(i); p.bar.Read32(off) != w {
				p.bar.Write32(off, w)
			}
		}
		if !mpe {
			p.layout.Multicast(p.bar, false)
		}
	})
}

// locked runs f with the registers mapped and no other filter or statistics access
// under way (statsMu, which Close holds while it unmaps), or returns errClosed.
func (p *Port) locked(f func()) error {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.closed.Load() {
		return errClosed
	}
	f()
	return nil
}
