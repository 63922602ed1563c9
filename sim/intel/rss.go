package intel

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// Toeplitz returns the Toeplitz hash of input under key, as the RSS engines of Intel NICs
// (and the Microsoft RSS specification) compute it: for every set bit of the input, XOR in
// the 32 key bits starting at that bit's position. key must hold at least len(input)+4
// bytes.
func Toeplitz(key, input []byte) uint32 {
	var h uint32
	win := binary.BigEndian.Uint32(key) // key bits [i, i+32)
	for i, b := range input {
		next := key[i+4]
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= win
			}
			win = win<<1 | uint32(next>>bit)&1
		}
	}
	return h
}

// rssFamily is one IP version's MRQC field bits and the RSS types they report.
type rssFamily struct {
	tcp, udp, ip             uint32 // MRQC field bits
	tcpType, udpType, ipType uint32
}

var (
	rssIPv4 = rssFamily{intelnic.MrqcIPv4TCP, intelnic.MrqcIPv4UDP, intelnic.MrqcIPv4,
		intelnic.RSSTypeIPv4TCP, intelnic.RSSTypeIPv4UDP, intelnic.RSSTypeIPv4}
	rssIPv6 = rssFamily{intelnic.MrqcIPv6TCP, intelnic.MrqcIPv6UDP, intelnic.MrqcIPv6,
		intelnic.RSSTypeIPv6TCP, intelnic.RSSTypeIPv6UDP, intelnic.RSSTypeIPv6}
)

// hash picks the most specific type mrqc enables for a packet of the family with
// addresses in, L4 protocol proto and L4 header l4 (nil for a fragment), and hashes its
// fields: the addresses, then the ports for TCP and UDP.
func (f rssFamily) hash(mrqc uint32, key, in []byte, proto byte, l4 []byte) (hash uint32, typ uint32) {
	ports := len(l4) >= 4
	switch {
	case proto == 6 && mrqc&f.tcp != 0 && ports:
		return Toeplitz(key, append(in, l4[:4]...)), f.tcpType
	case proto == 17 && mrqc&f.udp != 0 && ports:
		return Toeplitz(key, append(in, l4[:4]...)), f.udpType
	case mrqc&f.ip != 0:
		return Toeplitz(key, in), f.ipType
	}
	return 0, intelnic.RSSTypeNone
}

// rssHash computes the RSS hash of an Ethernet frame for the hash types enabled in mrqc.
// buf is scratch space of at least 36 bytes. It returns the RSS type 0 when no enabled
// type applies.
func rssHash(frame []byte, mrqc uint32, key []byte, buf []byte) (hash uint32, typ uint32) {
	if len(frame) < 14 {
		return 0, intelnic.RSSTypeNone
	}
	et := binary.BigEndian.Uint16(frame[12:])
	p := frame[14:]
	if et == 0x8100 && len(frame) >= 18 { // one VLAN tag
		et = binary.BigEndian.Uint16(frame[16:])
		p = frame[18:]
	}
	in := buf[:0]
	switch et {
	case 0x0800:
		if len(p) < 20 || p[0]>>4 != 4 {
			return 0, intelnic.RSSTypeNone
		}
		ihl := int(p[0]&0xf) * 4
		if ihl < 20 || len(p) < ihl {
			return 0, intelnic.RSSTypeNone
		}
		var l4 []byte
		if fragmented := binary.BigEndian.Uint16(p[6:])&0x3fff != 0; !fragmented {
			l4 = p[ihl:]
		}
		return rssIPv4.hash(mrqc, key, append(in, p[12:20]...), p[9], l4) // source, destination
	case 0x86dd:
		if len(p) < 40 || p[0]>>4 != 6 {
			return 0, intelnic.RSSTypeNone
		}
		return rssIPv6.hash(mrqc, key, append(in, p[8:40]...), p[6], p[40:])
	}
	return 0, intelnic.RSSTypeNone
}
