package l3fwd

import "encoding/binary"

// Ethernet and IP header facts (IEEE 802.3, RFC 791, RFC 8200).
const (
	ethHeader   = 14
	etherIPv4   = 0x0800
	etherIPv6   = 0x86dd
	etherARP    = 0x0806
	etherLLDP   = 0x88cc
	minFrame    = 60 // an Ethernet frame's least length without its FCS: shorter ones are padded
	ipv4Header  = 20 // without options
	ipv6Header  = 40
	ipv4TTL     = 8  // offsets in the IPv4 header
	ipv4Check   = 10 //
	ipv4Dst     = 16 //
	ipv6HopLim  = 7  // offsets in the IPv6 header
	ipv6Dst     = 24 //
	ipv6PayLen  = 4  //
	ipv4TotLen  = 2  //
	minForwardT = 2  // the least TTL or hop limit a router forwards (RFC 1812 5.3.1)
)

// checkIPv4 applies l3fwd's RFC 1812 checks to the IPv4 header at the start of h (the
// frame after its Ethernet header): room for the header, version 4, a header length of
// at least 20 bytes inside the frame, a total length that covers the header and fits the
// frame (Ethernet padding or trailing bytes may follow it, which forwarding trims), and a
// header checksum that verifies. Options are checked by checkOptions.
func checkIPv4(h []byte) verdict {
	if len(h) < ipv4Header {
		return vBadHeader
	}
	ihl := int(h[0]&0x0f) * 4
	tot := int(binary.BigEndian.Uint16(h[ipv4TotLen:]))
	if h[0]>>4 != 4 || ihl < ipv4Header || ihl > len(h) || tot < ihl || tot > len(h) {
		return vBadHeader
	}
	var sum uint64
	for i := 0; i+4 <= ihl; i += 4 {
		sum += uint64(binary.LittleEndian.Uint32(h[i:]))
	}
	if !sumOK(sum) {
		return vBadHeader
	}
	return vForward
}

// sumOK reports whether a header's checksum verifies, given the plain sum of its 32-bit
// words in either byte order (at most 2^40 of them): whether its one's-complement 16-bit
// sum is 0xffff. Since 2^16 ≡ 1 (mod 0xffff), a 32-bit word is congruent to the sum of
// its halves, and swapping a half's bytes multiplies it by 256, which is prime to 0xffff:
// so the header verifies exactly when the sum is a nonzero multiple of 0xffff (only an
// all-zero header sums to zero, and its version is not 4). RFC 1071 gives the same
// freedom of byte order.
func sumOK(sum uint64) bool { return sum != 0 && sum%0xffff == 0 }

// checkIPv6 checks the IPv6 header at the start of h: room for it, version 6, and a
// payload length that fits the frame.
func checkIPv6(h []byte) verdict {
	if len(h) < ipv6Header || h[0]>>4 != 6 {
		return vBadHeader
	}
	if int(binary.BigEndian.Uint16(h[ipv6PayLen:])) > len(h)-ipv6Header {
		return vBadHeader
	}
	return vForward
}

// checksum is the one's-complement sum of h's 16-bit words (len(h) a multiple of 4, at
// most 64), folded to 16 bits: 0xffff over a header whose checksum is right.
func checksum(h []byte) uint16 {
	var sum uint64
	for i := 0; i+4 <= len(h); i += 4 {
		sum += uint64(binary.BigEndian.Uint32(h[i:]))
	}
	sum = sum&0xffffffff + sum>>32
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return uint16(sum)
}

// decTTL decrements the TTL of the IPv4 header h (at least 1) and updates its checksum
// incrementally, RFC 1624's equation 3, HC' = ~(~HC + ~m + m'), m being the TTL/protocol
// word. With m' = m - 0x0100 that is HC + 0x0100 in one's-complement arithmetic, where a
// result of 0xffff is the other zero, 0x0000, as eqn. 3 and the kernel's ip_decrease_ttl
// give it. It works on the little-endian word of bytes 8–11 (TTL, protocol, checksum):
// one's-complement sums do not depend on byte order (RFC 1071), so the checksum's half
// gains 1, and 2 when that would make it 0xffff or carry out of it. TestDecTTL checks
// every checksum value against eqn. 3 itself.
func decTTL(h *[ipv4Header]byte) {
	le := binary.LittleEndian
	x := le.Uint32(h[ipv4TTL:])
	d := uint32(0x10000 - 1) // checksum half +1, TTL -1
	if x >= 0xfffe0000 {
		d += 0x10000
	}
	le.PutUint32(h[ipv4TTL:], x+d)
}
