// Package intelnic holds the register offsets, bit fields and descriptor layouts that
// Intel's 82576 and 82599 datasheets give alike (same offset, same bits), and Intel's
// PCI vendor id. Registers that sit at different offsets on the two parts are in
// packages i82576 and i82599.
//
// The package holds numbers only: the drivers (nic/igb, nic/ixgbe) and the device model
// (sim/intel) each implement their own behaviour from them, and QEMU's igb model checks
// the numbers independently in the guest tests.
package intelnic

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = 0x8086
