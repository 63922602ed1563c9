package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/uiod/uiod/wire"
)

// Wire is what a sim port's cable is plugged into: a wire.Spec, written as package wire
// parses it, so that `uiod latency` and the configuration name wires alike:
//
//	pair:NAME           one end of the in-memory wire NAME. Two ports naming the same
//	                    wire are cabled to each other; a port alone on its wire leaves
//	                    the other end to an in-process peer (a packet generator).
//	unix:LOCAL,REMOTE   a unix datagram socket bound at LOCAL that sends to REMOTE, one
//	                    raw frame per datagram (QEMU's "-netdev dgram" format).
//	afpacket:IFNAME     an AF_PACKET socket on the interface IFNAME.
//	tap:IFNAME          the TAP interface IFNAME.
//
// unixpair:LOCAL,REMOTE is accepted as another spelling of unix:LOCAL,REMOTE. The zero
// Wire (Kind "") is no wire, as on hardware ports.
type Wire struct {
	wire.Spec
}

// unixPairAlias is the configuration's other spelling of a unix wire.
const unixPairAlias = "unixpair:"

// ParseWire parses a wire specification (see Wire). The empty string is the zero Wire.
func ParseWire(s string) (Wire, error) {
	if s == "" {
		return Wire{}, nil
	}
	in := s
	if rest, ok := strings.CutPrefix(s, unixPairAlias); ok {
		in = string(wire.KindUnix) + ":" + rest
	}
	spec, err := wire.Parse(in)
	if se := (*wire.SpecError)(nil); errors.As(err, &se) {
		return Wire{}, se.Err // the caller names the value; keep only what is wrong with it
	}
	if err != nil {
		return Wire{}, err
	}
	return Wire{spec}, nil
}

// String formats the wire as ParseWire reads it, or "" for no wire.
func (w Wire) String() string {
	if w.Kind == "" {
		return ""
	}
	return w.Spec.String()
}

// MarshalText implements encoding.TextMarshaler.
func (w Wire) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseWire's rules.
func (w *Wire) UnmarshalText(b []byte) error { return unmarshalText(w, b, ParseWire) }

// checkName accepts port names: letters, digits, '-', '_' and '.', at most 64 bytes.
func checkName(s string) error {
	if s == "" {
		return fmt.Errorf("is empty")
	}
	if len(s) > 64 {
		return fmt.Errorf("is longer than 64 bytes")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("may only contain letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}
