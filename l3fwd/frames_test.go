package l3fwd

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// frame describes a test frame; build makes its bytes.
type frame struct {
	dst, src  net.HardwareAddr
	etherType uint16 // 0: from the addresses' family
	from, to  netip.Addr
	ttl       uint8
	options   []byte // IPv4 options, a multiple of 4 bytes
	payload   int    // UDP payload bytes
	badCheck  bool   // corrupt the IPv4 header checksum
	mangle    func(b []byte)
	trailer   int    // bytes of 0xee appended past the IP packet
	tag       uint16 // the UDP source port is 40000+tag; a non-IP frame carries it first
}

// tagPort is the UDP source port of the frame tagged 0.
const tagPort = 40000

// build returns the frame: Ethernet, IPv4 or IPv6, UDP with a zero checksum over IPv4 and
// a right one over IPv6 (the kernel checks neither when it forwards).
func (f frame) build() []byte {
	et := f.etherType
	if et == 0 {
		et = etherIPv4
		if f.to.Is6() {
			et = etherIPv6
		}
	}
	b := append(append([]byte{}, f.dst...), f.src...)
	b = binary.BigEndian.AppendUint16(b, et)
	udp := make([]byte, 8+f.payload)
	binary.BigEndian.PutUint16(udp[0:], tagPort+f.tag)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	for i := 8; i < len(udp); i++ {
		udp[i] = byte(i)
	}
	switch et {
	case etherIPv4:
		ihl := ipv4Header + len(f.options)
		h := make([]byte, ihl)
		h[0] = 0x40 | byte(ihl/4)
		binary.BigEndian.PutUint16(h[ipv4TotLen:], uint16(ihl+len(udp)))
		binary.BigEndian.PutUint16(h[4:], 0x1234) // id
		h[6] = 0x40                               // DF
		h[ipv4TTL] = f.ttl
		h[9] = 17
		copy(h[12:], f.from.AsSlice())
		copy(h[ipv4Dst:], f.to.AsSlice())
		copy(h[ipv4Header:], f.options)
		binary.BigEndian.PutUint16(h[ipv4Check:], ^checksum(h))
		if f.badCheck {
			h[ipv4Check] ^= 0x5a
		}
		b = append(append(b, h...), udp...)
	case etherIPv6:
		h := make([]byte, ipv6Header)
		h[0] = 0x60
		binary.BigEndian.PutUint16(h[ipv6PayLen:], uint16(len(udp)))
		h[6] = 17
		h[ipv6HopLim] = f.ttl
		copy(h[8:], f.from.AsSlice())
		copy(h[ipv6Dst:], f.to.AsSlice())
		binary.BigEndian.PutUint16(udp[6:], udp6Checksum(f.from, f.to, udp))
		b = append(append(b, h...), udp...)
	default:
		b = binary.BigEndian.AppendUint16(b, f.tag)
		b = append(b, make([]byte, 44)...)
	}
	for range f.trailer {
		b = append(b, 0xee)
	}
	if f.mangle != nil {
		f.mangle(b)
	}
	return b
}

// udp6Checksum is UDP's checksum over the IPv6 pseudo-header (RFC 8200 8.1).
func udp6Checksum(from, to netip.Addr, udp []byte) uint16 {
	var ph []byte
	ph = append(ph, from.AsSlice()...)
	ph = append(ph, to.AsSlice()...)
	ph = binary.BigEndian.AppendUint32(ph, uint32(len(udp)))
	ph = append(ph, 0, 0, 0, 17)
	ph = append(ph, udp...)
	for len(ph)%4 != 0 {
		ph = append(ph, 0)
	}
	c := ^checksum(ph)
	if c == 0 {
		c = 0xffff
	}
	return c
}
