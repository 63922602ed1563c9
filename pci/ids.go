package pci

// ReadIDs reads the vendor and device id from configuration space.
func ReadIDs(c ConfigSpace) (vendor, device uint16, err error) {
	if vendor, err = ReadConfig16(c, CfgVendorID); err != nil {
		return 0, 0, err
	}
	if device, err = ReadConfig16(c, CfgDeviceID); err != nil {
		return 0, 0, err
	}
	return vendor, device, nil
}
