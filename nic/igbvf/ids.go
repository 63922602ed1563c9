package igbvf

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic/internal/intel"
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps the supported PCI device ids to their names. Only the 82576's VF is
// listed: it is what QEMU's igb creates and the device model speaks. The I350's VF
// (0x1520) has the same register set but is left out until something exercises it.
var deviceIDs = map[uint16]string{
	i82576.VFDeviceID: "82576 VF",
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}
