// Package pci is the seam between the NIC drivers and the backends that open a PCI
// function: Device (its regions, configuration space and interrupt events), DMA memory,
// the configuration space offsets and capabilities, ids, classes and function addresses,
// and the errors they return (docs/design.md §2).
//
// It knows nothing of the host: finding, describing, binding and quiescing functions
// through sysfs is package pcihost, which imports pci and never the reverse, so a driver
// pulls in neither sysfs, pci.ids nor modprobe.
package pci

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/internal/clip"
)

// Addr is a PCI function address: domain, bus, device and function.
type Addr struct {
	Domain   uint16
	Bus      uint8
	Device   uint8 // 0..31
	Function uint8 // 0..7
}

// ErrBadAddr is wrapped by every error ParseAddr returns.
var ErrBadAddr = errors.New("invalid PCI address")

// ParseAddr parses "DDDD:BB:DD.F" or "BB:DD.F" (domain 0000). Hex digits may be upper or
// lower case; the field widths are exact. Anything else (paths, spaces, signs, out-of-range
// device or function numbers) is rejected before any path is built from it.
func ParseAddr(s string) (Addr, error) {
	bad := func(why string) (Addr, error) {
		return Addr{}, fmt.Errorf("%w %s: %s (want DDDD:BB:DD.F or BB:DD.F)", ErrBadAddr, clip.Quote(s), why)
	}
	var a Addr
	rest := s
	switch len(s) {
	case 12: // DDDD:BB:DD.F
		if s[4] != ':' {
			return bad("domain must be 4 hex digits followed by ':'")
		}
		d, ok := hexField(s[0:4])
		if !ok {
			return bad("domain is not 4 hex digits")
		}
		a.Domain = uint16(d)
		rest = s[5:]
	case 7: // BB:DD.F
	default:
		return bad("wrong length")
	}
	if rest[2] != ':' || rest[5] != '.' {
		return bad("separators must be ':' and '.'")
	}
	b, ok := hexField(rest[0:2])
	if !ok {
		return bad("bus is not 2 hex digits")
	}
	dev, ok := hexField(rest[3:5])
	if !ok {
		return bad("device is not 2 hex digits")
	}
	if dev > 0x1f {
		return bad("device is greater than 1f")
	}
	fn, ok := hexField(rest[6:7])
	if !ok || fn > 7 {
		return bad("function is not 0-7")
	}
	a.Bus, a.Device, a.Function = uint8(b), uint8(dev), uint8(fn)
	return a, nil
}

// MustParseAddr is ParseAddr for constants in tests and examples; it panics on error.
func MustParseAddr(s string) Addr {
	a, err := ParseAddr(s)
	if err != nil {
		panic(err)
	}
	return a
}

func hexField(s string) (uint32, bool) {
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// String formats the address as sysfs names it: "0000:03:00.1".
func (a Addr) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%d", a.Domain, a.Bus, a.Device, a.Function)
}

// MarshalText implements encoding.TextMarshaler.
func (a Addr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseAddr's rules.
func (a *Addr) UnmarshalText(b []byte) error {
	p, err := ParseAddr(string(b))
	if err != nil {
		return err
	}
	*a = p
	return nil
}
