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

// clearTables zeroes the filter tables a reset leaves with stale contents, as Linux does
// after reset: the multicast table array (ixgbe_init_rx_addrs_generic,
// igb_init_hw_82575), the VLAN filter table at vfta (0x0A000 on the 82599, 0x05600 on
// the 82576: ixgbe_clear_vfta, igb_clear_vfta) and the unicast hash table at uta
// (0x0F400 on the 82599: ixgbe_init_uta_tables_generic; 0x0A000 on the 82576:
// igb_init_hw_82575 "Zeroing the UTA").
func clearTables(r pci.Region, vfta, uta uint32) {
	for _, base := range []uint32{intelnic.MTA, vfta, uta} {
		for i := uint32(0); i < tableEntries; i++ {
			r.Write32(base+4*i, 0)
		}
	}
}

// clearRAR zeroes receive addresses 1 to entries-1 (RAL, then RAH with its valid bit off;
// ral returns entry i's RAL, RAH follows it): a previous owner's addresses (macvlan or VF
// filters) are not undone by a reset, and Linux clears them at init (igb_init_rx_addrs,
// ixgbe_init_rx_addrs_generic). Address 0 is the station address.
func clearRAR(r pci.Region, entries int, ral func(int) uint32) {
	for i := 1; i < entries; i++ {
		r.Write32(ral(i), 0)
		r.Write32(ral(i)+4, 0)
	}
}

// TakeOver takes the device from the firmware after a reset (CTRL_EXT.DRV_LOAD: Linux's
// igb_get_hw_control, ixgbe_get_hw_control) and clears what the reset leaves: the filter
// tables with the VLAN table at vfta and the unicast hash table at uta (clearTables) and
// receive addresses 1 to rarEntries-1, entry i's RAL at ral(i) (clearRAR).
func TakeOver(r pci.Region, vfta, uta uint32, rarEntries int, ral func(int) uint32) {
	r.Write32(intelnic.CTRLEXT, r.Read32(intelnic.CTRLEXT)|intelnic.CtrlExtDrvLoad)
	clearTables(r, vfta, uta)
	clearRAR(r, rarEntries, ral)
}

// HandBack hands the device back to the firmware: CTRL_EXT.DRV_LOAD off (Linux's
// igb_release_hw_control, ixgbe_release_hw_control). It is a PF driver's Ops.Release.
func HandBack(r pci.Region) {
	r.Write32(intelnic.CTRLEXT, r.Read32(intelnic.CTRLEXT)&^intelnic.CtrlExtDrvLoad)
}
