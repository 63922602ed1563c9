package pci

import "fmt"

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

// DeviceIDs reads function a's vendor and device id from its sysfs files. ok is false,
// with no error, when the host has no such function.
func (h *Host) DeviceIDs(a Addr) (vendor, device ID, ok bool, err error) {
	if ok, err = h.exists(a); err != nil || !ok {
		return 0, 0, false, err
	}
	for _, f := range []struct {
		name string
		dst  *ID
	}{{"vendor", &vendor}, {"device", &device}} {
		if err := h.readAttr(a, f.name, func(b []byte) error {
			v, err := parseID(b)
			*f.dst = ID(v)
			return err
		}); err != nil {
			return 0, 0, true, fmt.Errorf("%s: %w", a, err)
		}
	}
	return vendor, device, true, nil
}
