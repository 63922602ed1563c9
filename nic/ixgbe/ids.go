package ixgbe

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic/internal/intel"
)

// media is how an 82599 port reaches its link partner, which decides its link setup.
type media int

const (
	mediaFiber     media = iota // SFP+ cage: 10G serial (SFI) or 1G
	mediaBackplane              // KX4 / KX / KR backplane, XAUI LOM
	mediaCX4                    // CX4 copper: 10G XAUI without auto-negotiation
)

// String names the media type.
func (m media) String() string {
	switch m {
	case mediaFiber:
		return "SFP+"
	case mediaBackplane:
		return "backplane"
	case mediaCX4:
		return "CX4"
	}
	return "unknown media"
}

// device is one supported 82599 device id.
type device struct {
	name  string
	media media
}

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps the PCI device ids this driver supports to their name and media (ids
// from Linux's ixgbe_type.h, media as ixgbe_get_media_type_82599 assigns them). Only
// 82599 functions whose media the driver sets up (and the device model exercises) are
// listed. Left out: the 82599 10GBASE-T LOM (0x151C, an external copper PHY to program
// over MDIO), the LS (0x154F) and QSFP+ (0x1558) variants, the X540 (copper, its own PHY
// setup), the X550 family (512-entry redirection table, its own link setup) and the 82598
// (different interrupt and queue registers).
var deviceIDs = map[uint16]device{
	i82599.DeviceSFP:            {"82599 SFP+", mediaFiber},
	i82599.DeviceSFPFCoE:        {"82599 SFP+ FCoE", mediaFiber},
	i82599.DeviceSFPEM:          {"82599EB SFP+ EM", mediaFiber},
	i82599.DeviceSFPSF2:         {"82599 SFP+ SF2", mediaFiber},
	i82599.DeviceSFPSFQP:        {"82599 SFP+ SF QP", mediaFiber},
	i82599.DeviceENSFP:          {"82599EN SFP+", mediaFiber},
	i82599.DeviceKX4:            {"82599 KX4", mediaBackplane},
	i82599.DeviceKX4Mezz:        {"82599 KX4 mezzanine", mediaBackplane},
	i82599.DeviceComboBackplane: {"82599 combined backplane", mediaBackplane},
	i82599.DeviceKR:             {"82599 KR", mediaBackplane},
	i82599.DeviceBackplaneFCoE:  {"82599 backplane FCoE", mediaBackplane},
	i82599.DeviceXAUILOM:        {"82599 XAUI LOM", mediaBackplane},
	i82599.DeviceCX4:            {"82599 CX4", mediaCX4},
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}
