package l3fwd

import (
	"encoding/binary"
	"net/netip"

	"github.com/uiod/uiod/dataplane"
)

// verdict is what l3fwd decides for a frame: forward it, or why not. docs/design.md,
// "What the router forwards, drops and delivers", gives each its rule and reference.
type verdict uint8

const (
	vForward       verdict = iota
	vNoRoute               // no route: to the kernel (error)
	vTTLExpired            // TTL or hop limit < 2: to the kernel (error), time exceeded
	vBadHeader             // fails the header checks: dropped
	vNotIP                 // not ARP, LLDP, IPv4 or IPv6: to the kernel (error)
	vControlL2             // ARP or LLDP: to the kernel (control)
	vNotForUs              // a unicast MAC not the port's: dropped
	vL2Broadcast           // unicast IP in a link-layer broadcast or multicast: to the kernel (local)
	vMulticast             // an IP multicast destination: to the kernel (local or control)
	vBroadcast             // 255.255.255.255: to the kernel (local)
	vLocal                 // one of the router's addresses: to the kernel (local or control)
	vLinkLocal             // an IPv6 link-local destination: to the kernel (local)
	vLinkLocal4            // an IPv4 link-local source or destination (not local): dropped
	vLinkLocalSrc6         // an IPv6 link-local source leaving its link: to the kernel (error)
	vMartianSrc            // a source no host sends from: dropped
	vMartianDst            // a destination that is no host's: dropped
	vSourceRoute           // LSRR or SSRR: dropped
	vFragOffset            // a fragment at offset 1: dropped
	vND                    // IPv6 neighbour discovery: to the kernel (control)
	vMTU                   // over the output port's MTU: to the kernel (error)
	vUnresolved            // a route whose neighbour is not resolved: to the kernel (error)
	numVerdicts
)

// class is where a verdict sends a frame: dropped, or to the RX port's kernel path under
// one of the policer's classes (Config.Police), in order of priority.
type class uint8

const (
	classControl class = iota // ARP, ND, routing protocols
	classLocal                // the router's addresses, multicast, broadcast
	classError                // no route, TTL expired, too big, unknown EtherTypes
	numClasses
	classDrop = numClasses
)

var classNames = [numClasses]string{"control", "local", "error"}

// verdicts gives each verdict's drop reason and class.
var verdicts = [numVerdicts]struct {
	reason dataplane.DropReason
	class  class
}{
	vNoRoute:       {DropNoRoute, classError},
	vTTLExpired:    {DropTTLExpired, classError},
	vBadHeader:     {DropBadHeader, classDrop},
	vNotIP:         {DropNotIP, classError},
	vControlL2:     {DropNotIP, classControl},
	vNotForUs:      {DropNotForUs, classDrop},
	vL2Broadcast:   {DropL2Broadcast, classLocal},
	vMulticast:     {DropMulticast, classLocal},
	vBroadcast:     {DropBroadcast, classLocal},
	vLocal:         {DropLocal, classLocal},
	vLinkLocal:     {DropLinkLocal, classLocal},
	vLinkLocal4:    {DropLinkLocal, classDrop},
	vLinkLocalSrc6: {DropLinkLocal, classError},
	vMartianSrc:    {DropMartianSource, classDrop},
	vMartianDst:    {DropMartianDestination, classDrop},
	vSourceRoute:   {DropSourceRoute, classDrop},
	vFragOffset:    {DropFragmentOffset, classDrop},
	vND:            {DropNeighbourDiscovery, classControl},
	vMTU:           {DropMTU, classError},
	vUnresolved:    {DropUnresolved, classError},
}

// reserved are the destinations l3fwd never routes, in its tables as special next hops
// so that the one lookup a frame costs finds them: no route may lie inside one.
var reserved = []struct {
	prefix netip.Prefix
	v      verdict
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), vMartianDst, "this network"},
	{netip.MustParsePrefix("127.0.0.0/8"), vMartianDst, "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), vLinkLocal4, "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), vMulticast, "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), vBroadcast, "limited broadcast"},
	{netip.MustParsePrefix("::/128"), vMartianDst, "unspecified"},
	{netip.MustParsePrefix("::1/128"), vMartianDst, "loopback"},
	{netip.MustParsePrefix("fe80::/10"), vLinkLocal, "link-local"},
	{netip.MustParsePrefix("ff00::/8"), vMulticast, "multicast"},
}

// suspectSrc4 marks the first octets of IPv4 sources the fast path leaves to decide:
// 0, 127 and 224-255 (martian or class E), and 169 (169.254/16 is link-local).
var suspectSrc4 = func() (t [256]bool) {
	for _, o := range []int{0, 127, 169} {
		t[o] = true
	}
	for o := 224; o < 256; o++ {
		t[o] = true
	}
	return t
}()

// martianSrc4 reports whether s is an IPv4 source Linux calls martian: 0/8, 127/8,
// multicast or the limited broadcast (class E sources it forwards).
func martianSrc4(s uint32) bool {
	o := s >> 24
	return o == 0 || o == 127 || o>>4 == 0xe || s == 0xffffffff
}

// martianSrc6 reports whether s is an IPv6 source a router must not forward: ::, ::1
// (RFC 4291 2.5.2, 2.5.3) or multicast (2.7). (IPv4-mapped sources Linux forwards.)
func martianSrc6(s *[16]byte) bool {
	if s[0] == 0xff {
		return true
	}
	return binary.BigEndian.Uint64(s[:8]) == 0 && binary.BigEndian.Uint64(s[8:]) <= 1
}

// checkOptions walks the IPv4 options o: a source route (LSRR 131, SSRR 137) is
// vSourceRoute, an option whose length does not fit is vBadHeader, the rest (NOP, record
// route, timestamp, router alert, ...) are forwarded untouched.
func checkOptions(o []byte) verdict {
	for i := 0; i < len(o); {
		switch o[i] {
		case 0: // end of options
			return vForward
		case 1: // NOP
			i++
			continue
		}
		if i+1 >= len(o) {
			return vBadHeader
		}
		n := int(o[i+1])
		if n < 2 || i+n > len(o) {
			return vBadHeader
		}
		if o[i] == 131 || o[i] == 137 {
			return vSourceRoute
		}
		i += n
	}
	return vForward
}

// isND reports whether the ICMPv6 type t is neighbour discovery's: router solicitation
// and advertisement, neighbour solicitation and advertisement, redirect (RFC 4861).
func isND(t byte) bool { return t >= 133 && t <= 137 }

// protoClass is the class of a frame for the router itself (local, multicast) by its
// protocol: control for routing and link protocols (OSPF, VRRP, IGMP, PIM, MLD, BGP,
// BFD, RIP, LDP), local for the rest. f has passed checkIPv4 or checkIPv6.
func protoClass(f []byte) class {
	h := f[ethHeader:]
	var proto byte
	var l4 []byte
	if h[0]>>4 == 4 {
		proto, l4 = h[9], h[int(h[0]&0xf)*4:]
	} else {
		proto, l4 = h[6], h[ipv6Header:]
	}
	switch proto {
	case 0, 2, 89, 103, 112: // hop-by-hop (MLD's router alert), IGMP, OSPF, PIM, VRRP
		return classControl
	case 58: // ICMPv6: MLD
		if len(l4) > 0 && (l4[0] >= 130 && l4[0] <= 132 || l4[0] == 143) {
			return classControl
		}
	case 6, 17:
		if len(l4) < 4 {
			break
		}
		sp, dp := binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
		if proto == 6 && (sp == 179 || dp == 179 || dp == 646 || sp == 646) { // BGP, LDP
			return classControl
		}
		if proto == 17 && (dp == 3784 || dp == 3785 || dp == 4784 || dp == 520 || dp == 521 || dp == 646) {
			return classControl // BFD, RIP, RIPng, LDP discovery
		}
	}
	return classLocal
}
