package pcihost

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
)

// parseID parses a 16-bit id file (vendor, device, subsystem_vendor, subsystem_device).
func parseID(b []byte) (uint16, error) {
	v, err := pci.ParseHex(b, 4)
	return uint16(v), err
}

// parseClass parses the class file: 24 bits, class << 16 | subclass << 8 | prog-if.
func parseClass(b []byte) (pci.Class, error) {
	v, err := pci.ParseHex(b, 6)
	return pci.Class(v), err
}

// parseRevision parses the revision file (8 bits).
func parseRevision(b []byte) (uint8, error) {
	v, err := pci.ParseHex(b, 2)
	return uint8(v), err
}

// parseInt parses a decimal integer attribute such as numa_node ("-1\n").
func parseInt(b []byte) (int, error) {
	s := string(bytes.TrimSuffix(b, []byte("\n")))
	v, err := strconv.Atoi(s)
	if err != nil || len(s) > 11 {
		return 0, fmt.Errorf("%w value %s: not a decimal integer", pci.ErrMalformed, clip.Quote(string(b)))
	}
	return v, nil
}

// readAttr reads a sysfs attribute of a function, naming it in the error.
func (h *Host) readAttr(a pci.Addr, name string, parse func([]byte) error) error {
	b, err := h.ReadDeviceFile(a, name, MaxAttrSize)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if err := parse(b); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// DeviceIDs reads function a's vendor and device id from its sysfs files. ok is false,
// with no error, when the host has no such function.
func (h *Host) DeviceIDs(a pci.Addr) (vendor, device pci.ID, ok bool, err error) {
	if ok, err = h.exists(a); err != nil || !ok {
		return 0, 0, false, err
	}
	for _, f := range []struct {
		name string
		dst  *pci.ID
	}{{"vendor", &vendor}, {"device", &device}} {
		if err := h.readAttr(a, f.name, func(b []byte) error {
			v, err := parseID(b)
			*f.dst = pci.ID(v)
			return err
		}); err != nil {
			return 0, 0, true, fmt.Errorf("%s: %w", a, err)
		}
	}
	return vendor, device, true, nil
}
