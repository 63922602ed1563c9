package bridge

import "encoding/binary"

// Ethernet and 802.1Q layout.
const (
	ethHeader = 14
	tagLen    = 4
	tpid8021Q = 0x8100
	vidMask   = 0x0fff
	// linkLocal is 01:80:c2:00:00:00, the first of the 16 reserved addresses
	// (01:80:c2:00:00:00–0f) an 802.1D bridge never forwards: the STP BPDU address, pause
	// frames, LACP, 802.1X, LLDP.
	linkLocal = 0x0180c2000000
)

// frame is what the bridge reads of a frame's headers.
type frame struct {
	dst, src uint64 // 48-bit addresses, big-endian numbers
	tci      uint16 // the 802.1Q tag's TCI when tagged
	tagged   bool
}

// parseResult is why parse refused a frame (parseOK when it did not).
type parseResult uint8

const (
	parseOK        parseResult = iota
	parseRunt                  // shorter than its Ethernet (and 802.1Q) header
	parseBadSource             // a multicast or all-zero source address
	parseLinkLocal             // to 01:80:c2:00:00:0x (STP BPDUs among them)
)

// parse reads f's Ethernet header and its outer 802.1Q tag, if any. A frame with
// EtherType 0x8100 is tagged (an 802.1ad S-tag, 0x88a8, is payload to an 802.1Q
// bridge, as Linux's with vlan_protocol 802.1Q). It allocates nothing.
func parse(f []byte) (frame, parseResult) {
	if len(f) < ethHeader {
		return frame{}, parseRunt
	}
	be := binary.BigEndian
	fr := frame{
		dst: uint64(be.Uint16(f[0:]))<<32 | uint64(be.Uint32(f[2:])),
		src: uint64(be.Uint16(f[6:]))<<32 | uint64(be.Uint32(f[8:])),
	}
	if be.Uint16(f[12:]) == tpid8021Q {
		if len(f) < ethHeader+tagLen {
			return frame{}, parseRunt
		}
		fr.tagged, fr.tci = true, be.Uint16(f[14:])
	}
	switch {
	case fr.src&(1<<40) != 0 || fr.src == 0:
		return fr, parseBadSource
	case fr.dst&^0xf == linkLocal:
		return fr, parseLinkLocal
	}
	return fr, parseOK
}

// multicast reports whether a 48-bit address is a group address (broadcast included).
func multicast(mac uint64) bool { return mac&(1<<40) != 0 }

// retag rewrites the n-byte frame at the start of d (a buffer's whole data; tagged or not)
// in place into the form a port sends it in: with an 802.1Q tag carrying tci when tag is
// set, untagged otherwise. It returns the new length, or -1 when a tag does not fit in d.
func retag(d []byte, n int, tagged, tag bool, tci uint16) int {
	switch {
	case tagged && tag:
		binary.BigEndian.PutUint16(d[14:], tci)
	case tagged:
		copy(d[12:n-tagLen], d[16:n])
		n -= tagLen
	case tag:
		if n+tagLen > len(d) {
			return -1
		}
		copy(d[16:n+tagLen], d[12:n])
		binary.BigEndian.PutUint16(d[12:], tpid8021Q)
		binary.BigEndian.PutUint16(d[14:], tci)
		n += tagLen
	}
	return n
}

// copyAs writes frame src (tagged or not) into dst in the form retag makes, and returns
// its length, or -1 when it does not fit.
func copyAs(dst, src []byte, tagged, tag bool, tci uint16) int {
	body := src[12:]
	if tagged {
		body = src[16:]
	}
	n := 12 + len(body)
	if tag {
		n += tagLen
	}
	if n > len(dst) {
		return -1
	}
	copy(dst[:12], src[:12])
	if tag {
		binary.BigEndian.PutUint16(dst[12:], tpid8021Q)
		binary.BigEndian.PutUint16(dst[14:], tci)
		copy(dst[16:], body)
	} else {
		copy(dst[12:], body)
	}
	return n
}
