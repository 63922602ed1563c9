package igb

import (
	"github.com/uiod/uiod/nic/internal/intel"
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps the supported PCI device ids to their names (ids from Linux's
// e1000_hw.h). Only 82576 functions are listed: the 82576 is what QEMU's igb emulates
// and the device model speaks. Left out until something exercises them: the I350
// (82580-style IVAR layout, 8 queues), the I210/I211 (flash-less NVM at another
// register, 4 and 2 queues) and the 82575.
var deviceIDs = map[uint16]string{
	0x10C9: "82576",
	0x10E6: "82576 fiber",
	0x10E7: "82576 serdes",
	0x10E8: "82576 quad copper",
	0x1526: "82576 quad copper ET2",
	0x150A: "82576 NS",
	0x1518: "82576 NS serdes",
	0x150D: "82576 serdes quad",
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}
