package latency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Frame layout of a probe: Ethernet, IPv4 without options, UDP, then the probe payload
// {magic u32, sequence u64, send time i64}, all big-endian, then zero padding to the size.
const (
	ethLen     = 14
	ipv4Len    = 20
	udpLen     = 8
	payloadLen = 4 + 8 + 8
	// MinFrameSize and MaxFrameSize bound the configurable frame size (bytes on the wire
	// without FCS): up to the longest untagged frame of the largest MTU a NIC port takes
	// (9710, the 82599's). StdFrameSize is the longest frame of the standard MTU.
	MinFrameSize = 64
	MaxFrameSize = 9710 + ethLen
	StdFrameSize = 1514

	offIP      = ethLen
	offUDP     = offIP + ipv4Len
	offPayload = offUDP + udpLen
	offSeq     = offPayload + 4
	offTime    = offSeq + 8
)

// Kind says what a generated frame is for.
type Kind uint32

// The kinds of frame the generator sends, told apart by the payload's magic number.
const (
	KindProbe      Kind = 0x75694c54 // "uiLT": a measured probe
	KindBackground Kind = 0x75694247 // "uiBG": background load, counted but not measured
)

// Addrs are the addresses every generated frame carries.
type Addrs struct {
	SrcMAC, DstMAC   net.HardwareAddr
	SrcIP, DstIP     netip.Addr // IPv4
	SrcPort, DstPort uint16
}

// DefaultAddrs are locally administered MACs and TEST-NET-1 addresses; UDP port 319 is
// PTP's event port, as in MoonGen's timestamping examples.
func DefaultAddrs() Addrs {
	return Addrs{
		SrcMAC:  net.HardwareAddr{0x02, 0x75, 0x69, 0x6f, 0x64, 0x01},
		DstMAC:  net.HardwareAddr{0x02, 0x75, 0x69, 0x6f, 0x64, 0x02},
		SrcIP:   netip.AddrFrom4([4]byte{192, 0, 2, 1}),
		DstIP:   netip.AddrFrom4([4]byte{192, 0, 2, 2}),
		SrcPort: 319,
		DstPort: 319,
	}
}

// Probe is what ParseProbe found in a frame.
type Probe struct {
	Kind   Kind
	Seq    uint64
	SentAt int64 // wire.Now at the sender
}

// frameTemplate is a pre-built frame whose UDP source port, sequence number, timestamp
// and UDP checksum are filled in per send, without allocating.
type frameTemplate struct {
	buf     []byte
	port    uint16 // the UDP source port of stamp
	partial uint32 // UDP checksum sum over everything but the source port, seq and time
}

func newFrameTemplate(a Addrs, size int, kind Kind) (*frameTemplate, error) {
	if size < MinFrameSize || size > MaxFrameSize {
		return nil, fmt.Errorf("frame size %d is outside %d..%d", size, MinFrameSize, MaxFrameSize)
	}
	if len(a.SrcMAC) != 6 || len(a.DstMAC) != 6 {
		return nil, errors.New("source and destination MAC must be 6 bytes")
	}
	if !a.SrcIP.Is4() || !a.DstIP.Is4() {
		return nil, errors.New("source and destination IP must be IPv4")
	}
	b := make([]byte, size)
	copy(b[0:6], a.DstMAC)
	copy(b[6:12], a.SrcMAC)
	binary.BigEndian.PutUint16(b[12:], 0x0800)

	ip := b[offIP:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(size-ethLen))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8] = 64
	ip[9] = 17
	src, dst := a.SrcIP.As4(), a.DstIP.As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum16(ip[:ipv4Len], 0)))

	udp := b[offUDP:]
	ulen := size - offUDP
	binary.BigEndian.PutUint16(udp[2:], a.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(ulen))
	binary.BigEndian.PutUint32(b[offPayload:], uint32(kind))

	t := &frameTemplate{buf: b, port: a.SrcPort}
	t.partial = sum16(udp[:ulen], pseudoSum(ip, ulen)) // port, seq, time and checksum are zero now
	return t, nil
}

// stamp writes seq and sentAt into the frame, fixes the UDP checksum and returns the frame.
func (t *frameTemplate) stamp(seq uint64, sentAt int64) []byte {
	return t.stampFlow(seq, sentAt, t.port)
}

// stampFlow is stamp with the UDP source port srcPort.
func (t *frameTemplate) stampFlow(seq uint64, sentAt int64, srcPort uint16) []byte {
	b := t.buf
	binary.BigEndian.PutUint16(b[offUDP:], srcPort)
	binary.BigEndian.PutUint64(b[offSeq:], seq)
	binary.BigEndian.PutUint64(b[offTime:], uint64(sentAt))
	c := ^fold(sum16(b[offSeq:offTime+8], t.partial+uint32(srcPort)))
	if c == 0 {
		c = 0xffff // 0 means "no checksum" in UDP over IPv4
	}
	binary.BigEndian.PutUint16(b[offUDP+6:], c)
	return b
}

// pseudoSum is the one's-complement sum of the IPv4 pseudo-header for a UDP datagram of
// length ulen; ip is the IPv4 header.
func pseudoSum(ip []byte, ulen int) uint32 {
	s := sum16(ip[12:20], 0)
	return s + 17 + uint32(ulen)
}

// sum16 adds b as big-endian 16-bit words (an odd last byte padded with zero) to s.
func sum16(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// fold folds a 32-bit one's-complement sum into 16 bits.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// Reasons ParseProbe rejects a frame.
var (
	ErrShortFrame  = errors.New("frame too short for a probe")
	ErrNotIPv4UDP  = errors.New("not an IPv4 UDP frame")
	ErrBadLength   = errors.New("IPv4 or UDP length inconsistent with the frame")
	ErrIPChecksum  = errors.New("bad IPv4 header checksum")
	ErrUDPChecksum = errors.New("bad UDP checksum")
	ErrNotProbe    = errors.New("no probe magic in the UDP payload")
)

// ParseProbe checks that frame is an Ethernet/IPv4/UDP frame with valid checksums whose
// payload starts with a generator magic, or a PTP probe (ptpprobe.go), and returns the
// probe's fields. It does not
// allocate. IPv4 options and Ethernet padding after the IP packet are accepted.
func ParseProbe(frame []byte) (Probe, error) {
	if p, ok, err := parsePTPProbe(frame); ok {
		return p, err
	}
	if len(frame) < offPayload+payloadLen {
		return Probe{}, ErrShortFrame
	}
	if binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return Probe{}, ErrNotIPv4UDP
	}
	ip := frame[offIP:]
	if ip[0]>>4 != 4 || ip[9] != 17 {
		return Probe{}, ErrNotIPv4UDP
	}
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ihl < ipv4Len || total > len(ip) || total < ihl+udpLen+payloadLen {
		return Probe{}, ErrBadLength
	}
	if fold(sum16(ip[:ihl], 0)) != 0xffff {
		return Probe{}, ErrIPChecksum
	}
	udp := ip[ihl:total]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < udpLen+payloadLen || ulen > len(udp) {
		return Probe{}, ErrBadLength
	}
	udp = udp[:ulen]
	if binary.BigEndian.Uint16(udp[6:]) != 0 && fold(sum16(udp, pseudoSum(ip, ulen))) != 0xffff {
		return Probe{}, ErrUDPChecksum
	}
	p := udp[udpLen:]
	k := Kind(binary.BigEndian.Uint32(p))
	if k != KindProbe && k != KindBackground {
		return Probe{}, ErrNotProbe
	}
	return Probe{
		Kind:   k,
		Seq:    binary.BigEndian.Uint64(p[4:]),
		SentAt: int64(binary.BigEndian.Uint64(p[12:])),
	}, nil
}
