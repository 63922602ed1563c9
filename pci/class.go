package pci

import (
	"bytes"
	"fmt"

	"github.com/uiod/uiod/internal/clip"
)

// Class is a 24-bit PCI class code: base class << 16 | subclass << 8 | programming interface.
type Class uint32

// Base classes and subclasses used by uiod.
const (
	ClassNetwork Class = 0x02_00_00 // network controller (any subclass)
	ClassBridge  Class = 0x06_04_00 // PCI-to-PCI bridge (any programming interface)
)

// Base returns the base class (the top byte).
func (c Class) Base() uint8 { return uint8(c >> 16) }

// Sub returns the subclass (the middle byte).
func (c Class) Sub() uint8 { return uint8(c >> 8) }

// IsNetwork reports whether the class is a network controller.
func (c Class) IsNetwork() bool { return c.Base() == ClassNetwork.Base() }

// IsBridge reports whether the class is a PCI-to-PCI bridge (class 0x0604), which does not
// count against the viability of an IOMMU group.
func (c Class) IsBridge() bool { return c>>8 == ClassBridge>>8 }

// String formats the class as six hex digits, "020000".
func (c Class) String() string { return fmt.Sprintf("%06x", uint32(c)) }

// MarshalText implements encoding.TextMarshaler.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Class) UnmarshalText(b []byte) error { return unmarshalHex(c, b, 6) }

// ID is a 16-bit PCI vendor or device id. It formats as four hex digits, "8086".
type ID uint16

// String formats the id as four hex digits.
func (id ID) String() string { return fmt.Sprintf("%04x", uint16(id)) }

// MarshalText implements encoding.TextMarshaler.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error { return unmarshalHex(id, b, 4) }

// unmarshalHex sets *v to the hex value b of up to digits digits (ParseHex); on an error
// *v is left as it was.
func unmarshalHex[T ~uint16 | ~uint32](v *T, b []byte, digits int) error {
	x, err := ParseHex(b, digits)
	if err == nil {
		*v = T(x)
	}
	return err
}

// ParseHex parses a hex value as sysfs shows one, such as a vendor ("0x8086\n") or a
// class ("0x020000\n"): an optional 0x prefix, 1 to digits hex digits, an optional
// trailing newline, nothing else. Any other content is an error wrapping ErrMalformed.
func ParseHex(b []byte, digits int) (uint32, error) {
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
