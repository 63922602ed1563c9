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
	var proto byte
	var l4 []byte
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
		in = append(in, p[12:20]...) // source, destination
		proto = p[9]
		fragmented := binary.BigEndian.Uint16(p[6:])&0x3fff != 0
		if !fragmented {
			l4 = p[ihl:]
		}
		switch {
		case proto == 6 && mrqc&intelnic.MrqcIPv4TCP != 0 && len(l4) >= 4:
			return Toeplitz(key, append(in, l4[:4]...)), intelnic.RSSTypeIPv4TCP
		case proto == 17 && mrqc&intelnic.MrqcIPv4UDP != 0 && len(l4) >= 4:
			return Toeplitz(key, append(in, l4[:4]...)), intelnic.RSSTypeIPv4UDP
		case mrqc&intelnic.MrqcIPv4 != 0:
			return Toeplitz(key, in), intelnic.RSSTypeIPv4
		}
	case 0x86dd:
		if len(p) < 40 || p[0]>>4 != 6 {
			return 0, intelnic.RSSTypeNone
		}
		in = append(in, p[8:40]...)
		proto, l4 = p[6], p[40:]
		switch {
		case proto == 6 && mrqc&intelnic.MrqcIPv6TCP != 0 && len(l4) >= 4:
			return Toeplitz(key, append(in, l4[:4]...)), intelnic.RSSTypeIPv6TCP
		case proto == 17 && mrqc&intelnic.MrqcIPv6UDP != 0 && len(l4) >= 4:
			return Toeplitz(key, append(in, l4[:4]...)), intelnic.RSSTypeIPv6UDP
		case mrqc&intelnic.MrqcIPv6 != 0:
			return Toeplitz(key, in), intelnic.RSSTypeIPv6
		}
	}
	return 0, intelnic.RSSTypeNone
}
