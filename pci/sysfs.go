package pci

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/uiod/uiod/internal/clip"
)

// ErrMalformed is wrapped by every error about a sysfs or procfs file whose content does
// not have the expected format.
var ErrMalformed = errors.New("malformed")

// parseHex parses the content of a sysfs hex attribute such as vendor ("0x8086\n") or
// class ("0x020000\n"): an optional 0x prefix, 1 to digits hex digits, an optional
// trailing newline, nothing else.
func parseHex(b []byte, digits int) (uint32, error) {
	s := bytes.TrimSuffix(b, []byte("\n"))
	s = bytes.TrimPrefix(bytes.TrimPrefix(s, []byte("0x")), []byte("0X"))
	if len(s) == 0 || len(s) > digits {
		return 0, fmt.Errorf("%w value %s: want up to %d hex digits", ErrMalformed, clip.Quote(string(b)), digits)
	}
	v, ok := hexField(string(s))
	if !ok {
		return 0, fmt.Errorf("%w value %s: not hex", ErrMalformed, clip.Quote(string(b)))
	}
	return v, nil
}

// parseID parses a 16-bit id file (vendor, device, subsystem_vendor, subsystem_device).
func parseID(b []byte) (uint16, error) {
	v, err := parseHex(b, 4)
	return uint16(v), err
}

// parseClass parses the class file: 24 bits, class << 16 | subclass << 8 | prog-if.
func parseClass(b []byte) (Class, error) {
	v, err := parseHex(b, 6)
	return Class(v), err
}

// parseRevision parses the revision file (8 bits).
func parseRevision(b []byte) (uint8, error) {
	v, err := parseHex(b, 2)
	return uint8(v), err
}

// parseInt parses a decimal integer attribute such as numa_node ("-1\n").
func parseInt(b []byte) (int, error) {
	s := string(bytes.TrimSuffix(b, []byte("\n")))
	v, err := strconv.Atoi(s)
	if err != nil || len(s) > 11 {
		return 0, fmt.Errorf("%w value %s: not a decimal integer", ErrMalformed, clip.Quote(string(b)))
	}
	return v, nil
}

// readAttr reads a sysfs attribute of a function, naming it in the error.
func (h *Host) readAttr(a Addr, name string, parse func([]byte) error) error {
	b, err := h.ReadDeviceFile(a, name, MaxAttrSize)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if err := parse(b); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
