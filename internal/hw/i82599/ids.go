package i82599

// PCI device ids of 82599 functions (Linux ixgbe_type.h IXGBE_DEV_ID_82599_*).
const (
	DeviceSFP            = 0x10FB
	DeviceSFPFCoE        = 0x1529
	DeviceSFPEM          = 0x1507
	DeviceSFPSF2         = 0x154D
	DeviceSFPSFQP        = 0x154A
	DeviceENSFP          = 0x1557 // 82599EN
	DeviceKX4            = 0x10F7
	DeviceKX4Mezz        = 0x1514
	DeviceComboBackplane = 0x10F8
	DeviceKR             = 0x1517
	DeviceBackplaneFCoE  = 0x152A
	DeviceXAUILOM        = 0x10FC
	DeviceCX4            = 0x10F9
)
