package testutil

import "encoding/binary"

// Checksum is the Internet checksum of b (RFC 1071), computed from scratch: for a test to
// fill a header's checksum field (zero while it is summed) or to check one (0 over a
// header with its field filled).
func Checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
