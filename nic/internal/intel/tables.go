package intel

import "github.com/uiod/uiod/pci"

// Filter tables at the same offsets on the 82599 and the 82576.
const (
	regMTA     = 0x05200 // multicast table array, 128 registers
	mtaEntries = 128
)

// ClearTables zeroes the filter tables a reset may leave with stale contents, as Linux's
// ixgbe_init_rx_addrs_generic and e1000_init_rx_addrs_generic do after reset: the
// multicast table array, and n registers of the VLAN filter table at vfta (0x0A000 on
// the 82599, 0x05600 on the 82576), like ixgbe_clear_vfta and e1000_clear_vfta.
func ClearTables(r pci.Region, vfta uint32, n int) {
	for i := uint32(0); i < mtaEntries; i++ {
		r.Write32(regMTA+4*i, 0)
	}
	for i := uint32(0); i < uint32(n); i++ {
		r.Write32(vfta+4*i, 0)
	}
}
