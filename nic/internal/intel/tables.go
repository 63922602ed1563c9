package intel

import (
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/pci"
)

// Filter tables of 128 registers each; the multicast table array is at the same offset
// on the 82599 and the 82576.
const (
	tableEntries = 128
)

// ClearTables zeroes the filter tables a reset leaves with stale contents, as Linux does
// after reset: the multicast table array (ixgbe_init_rx_addrs_generic,
// igb_init_hw_82575), the VLAN filter table at vfta (0x0A000 on the 82599, 0x05600 on
// the 82576: ixgbe_clear_vfta, igb_clear_vfta) and the unicast hash table at uta
// (0x0F400 on the 82599: ixgbe_init_uta_tables_generic; 0x0A000 on the 82576:
// igb_init_hw_82575 "Zeroing the UTA").
func ClearTables(r pci.Region, vfta, uta uint32) {
	for _, base := range []uint32{intelnic.MTA, vfta, uta} {
		for i := uint32(0); i < tableEntries; i++ {
			r.Write32(base+4*i, 0)
		}
	}
}

// ClearRAR zeroes receive addresses 1 to entries-1 (RAL, then RAH with its valid bit off;
// ral returns entry i's RAL, RAH follows it): a previous owner's addresses (macvlan or VF
// filters) are not undone by a reset, and Linux clears them at init (igb_init_rx_addrs,
// ixgbe_init_rx_addrs_generic). Address 0 is the station address.
func ClearRAR(r pci.Region, entries int, ral func(int) uint32) {
	for i := 1; i < entries; i++ {
		r.Write32(ral(i), 0)
		r.Write32(ral(i)+4, 0)
	}
}
