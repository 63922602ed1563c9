package testutil

import (
	"encoding/binary"
	"net"
)

// ARPRequest is a broadcast Ethernet ARP request (42 bytes, unpadded) from sha at spa
// asking for tpa: what the tests send a kernel interface to see it answer.
func ARPRequest(sha net.HardwareAddr, spa, tpa [4]byte) []byte {
	f := make([]byte, 42)
	copy(f[0:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:], sha)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	copy(f[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1}) // Ethernet, IPv4, 6- and 4-byte addresses, request
	copy(f[22:], sha)
	copy(f[28:], spa[:])
	copy(f[38:], tpa[:])
	return f
}
