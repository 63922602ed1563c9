package igb

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic/internal/intel"
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps the supported PCI device ids to their names (ids from Linux's
// e1000_hw.h). Only 82576 functions are listed: the 82576 is what QEMU's igb emulates
// and the device model speaks; its SerDes parts bring their link up through the PCS
// (link.go). Left out until something exercises them: the I350
// (82580-style IVAR layout, 8 queues), the I210/I211 (flash-less NVM at another
// register, 4 and 2 queues) and the 82575.
var deviceIDs = map[uint16]string{
	i82576.DeviceID:         "82576",
	i82576.DeviceFiber:      "82576 fiber",
	i82576.DeviceSerDes:     "82576 serdes",
	0x10E8:                  "82576 quad copper",
	0x1526:                  "82576 quad copper ET2",
	0x150A:                  "82576 NS",
	i82576.DeviceNSSerDes:   "82576 NS serdes",
	i82576.DeviceSerDesQuad: "82576 serdes quad",
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}
