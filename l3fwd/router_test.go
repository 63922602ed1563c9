package l3fwd

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/uiod/uiod/dataplane"
)

// routerApp has default routes on both families to port 1, as a router on a real
// network does, and the router's own addresses on port 0's link.
func routerApp(t testing.TB) *App {
	t.Helper()
	a, err := New(Config{
		Ports: []net.HardwareAddr{macP0, macP1},
		Routes: []Route{
			{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 1, NextHopMAC: macNH1},
			{Prefix: netip.MustParsePrefix("::/0"), Port: 1, NextHopMAC: macNH1},
			{Prefix: netip.MustParsePrefix("10.9.0.0/16"), Port: 0, NextHopMAC: macNH2},
		},
		Local: []netip.Prefix{
			netip.MustParsePrefix("192.0.2.254/32"), netip.MustParsePrefix("192.0.2.255/32"),
			netip.MustParsePrefix("2001:db8:f0::1/128"),
		},
		MTU: []int{1500, 1400},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	macBcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	macOther = net.HardwareAddr{0x02, 0, 0, 0, 0xdd, 1}
)

// icmp6 makes f an ICMPv6 message of type typ (the UDP header's first byte).
func icmp6(typ byte) func(b []byte) {
	return func(b []byte) {
		b[14+6] = 58
		b[14+ipv6Header] = typ
	}
}

// TestMustNotForward: what RFC 1812 5.3.4-5.3.7, RFC 3927, RFC 4291 and RFC 8200 say a
// router must not forward, and what it must deliver to itself, under default routes. On
// the old code every one of these was forwarded to port 1 (the audit's
// TestAuditMustNotForward: 10 of 10).
func TestMustNotForward(t *testing.T) {
	a := routerApp(t)
	v4 := func(from, to string) frame {
		return frame{dst: macP0, src: macSrc, from: netip.MustParseAddr(from), to: netip.MustParseAddr(to), ttl: 64, payload: 32}
	}
	v6 := v4 // the addresses choose the family: the name says which the row means
	with := func(f frame, m func(*frame)) frame { m(&f); return f }
	l2 := func(mac net.HardwareAddr) func(*frame) { return func(f *frame) { f.dst = mac } }
	hop := func(h uint8) func(*frame) { return func(f *frame) { f.ttl = h } }
	mangle := func(m func([]byte)) func(*frame) { return func(f *frame) { f.mangle = m } }
	tests := []struct {
		name   string
		in     frame
		reason dataplane.DropReason
		class  class
	}{
		{"limited broadcast", with(v4("192.0.2.1", "255.255.255.255"), l2(macBcast)), DropBroadcast, classLocal},
		{"DHCP discover from 0.0.0.0", with(v4("0.0.0.0", "255.255.255.255"), l2(macBcast)), DropBroadcast, classLocal},
		{"directed broadcast listed local", with(v4("192.0.2.1", "192.0.2.255"), l2(macBcast)), DropLocal, classLocal},
		{"mDNS 224.0.0.251", with(v4("192.0.2.1", "224.0.0.251"), l2(net.HardwareAddr{1, 0, 0x5e, 0, 0, 0xfb})), DropMulticast, classLocal},
		{"OSPF hello 224.0.0.5", with(v4("192.0.2.1", "224.0.0.5"), func(f *frame) {
			f.dst = net.HardwareAddr{1, 0, 0x5e, 0, 0, 5}
			f.mangle = func(b []byte) { b[14+9] = 89; fixCheck(b) }
		}), DropMulticast, classControl},
		{"multicast to the port's MAC", v4("192.0.2.1", "239.1.1.1"), DropMulticast, classLocal},
		{"loopback destination", v4("192.0.2.1", "127.0.0.1"), DropMartianDestination, classDrop},
		{"0/8 destination", v4("192.0.2.1", "0.1.2.3"), DropMartianDestination, classDrop},
		{"link-local destination", v4("192.0.2.1", "169.254.1.1"), DropLinkLocal, classDrop},
		{"link-local source", v4("169.254.1.1", "10.1.1.1"), DropLinkLocal, classDrop},
		{"source 0.0.0.0", v4("0.0.0.0", "10.1.1.1"), DropMartianSource, classDrop},
		{"source 127.0.0.1", v4("127.0.0.1", "10.1.1.1"), DropMartianSource, classDrop},
		{"multicast source", v4("224.0.0.1", "10.1.1.1"), DropMartianSource, classDrop},
		{"broadcast source", v4("255.255.255.255", "10.1.1.1"), DropMartianSource, classDrop},
		{"unicast IP in link-layer broadcast", with(v4("192.0.2.1", "10.1.1.1"), l2(macBcast)), DropL2Broadcast, classLocal},
		{"unicast IP in link-layer multicast", with(v4("192.0.2.1", "10.1.1.1"), l2(net.HardwareAddr{1, 0, 0x5e, 0, 0, 1})), DropL2Broadcast, classLocal},
		{"frame for another host's MAC", with(v4("192.0.2.1", "10.1.1.1"), l2(macOther)), DropNotForUs, classDrop},
		{"ARP for another host's MAC", frame{dst: macOther, src: macSrc, etherType: etherARP}, DropNotForUs, classDrop},
		{"to the router's address", v4("192.0.2.1", "192.0.2.254"), DropLocal, classLocal},
		{"ssh to the router's address, ttl 1", with(v4("192.0.2.1", "192.0.2.254"), hop(1)), DropLocal, classLocal},
		{"BGP to the router's address", with(v4("192.0.2.1", "192.0.2.254"), mangle(func(b []byte) {
			b[14+9] = 6
			binary.BigEndian.PutUint16(b[14+ipv4Header+2:], 179)
			fixCheck(b)
		})), DropLocal, classControl},
		{"ARP broadcast", frame{dst: macBcast, src: macSrc, etherType: etherARP}, DropNotIP, classControl},
		{"LLDP", frame{dst: net.HardwareAddr{1, 0x80, 0xc2, 0, 0, 0xe}, src: macSrc, etherType: etherLLDP}, DropNotIP, classControl},
		{"VLAN", frame{dst: macP0, src: macSrc, etherType: 0x8100}, DropNotIP, classError},
		{"ipv6 NS to solicited-node", with(v6("2001:db8:f0::2", "ff02::1:ff00:1"), func(f *frame) {
			f.dst, f.ttl, f.mangle = net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 1}, 255, icmp6(135)
		}), DropNeighbourDiscovery, classControl},
		{"ipv6 RS to all-routers", with(v6("fe80::2", "ff02::2"), func(f *frame) {
			f.dst, f.ttl, f.mangle = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 2}, 255, icmp6(133)
		}), DropNeighbourDiscovery, classControl},
		{"ipv6 DAD NS from ::", with(v6("::", "ff02::1:ff00:2"), func(f *frame) {
			f.dst, f.ttl, f.mangle = net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 2}, 255, icmp6(135)
		}), DropNeighbourDiscovery, classControl},
		{"ipv6 unicast NS (NUD) to a global address", with(v6("2001:db8:f0::2", "2001:db8:f0::9"), func(f *frame) {
			f.ttl, f.mangle = 255, icmp6(135)
		}), DropNeighbourDiscovery, classControl},
		{"ipv6 MLD report", with(v6("fe80::2", "ff02::16"), func(f *frame) {
			f.dst, f.ttl, f.mangle = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 0x16}, 1, icmp6(143)
		}), DropMulticast, classControl},
		{"ipv6 multicast", with(v6("2001:db8:f0::2", "ff05::fb"), l2(net.HardwareAddr{0x33, 0x33, 0, 0, 0, 0xfb})), DropMulticast, classLocal},
		{"ipv6 interface-local multicast", with(v6("2001:db8:f0::2", "ff01::1"), l2(net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1})), DropMartianDestination, classDrop},
		{"ipv6 link-local destination", v6("2001:db8:f0::2", "fe80::1"), DropLinkLocal, classLocal},
		{"ipv6 link-local source", v6("fe80::2", "2001:db8:1::1"), DropLinkLocal, classError},
		{"ipv6 loopback destination", v6("2001:db8:f0::2", "::1"), DropMartianDestination, classDrop},
		{"ipv6 loopback source", v6("::1", "2001:db8:1::1"), DropMartianSource, classDrop},
		{"ipv6 unspecified source", v6("::", "2001:db8:1::1"), DropMartianSource, classDrop},
		{"ipv6 multicast source", v6("ff02::1", "2001:db8:1::1"), DropMartianSource, classDrop},
		{"ipv6 to the router's address", v6("2001:db8:f0::2", "2001:db8:f0::1"), DropLocal, classLocal},
		{"ipv6 unicast in link-layer broadcast", with(v6("2001:db8:f0::2", "2001:db8:1::1"), l2(macBcast)), DropL2Broadcast, classLocal},
		{"ipv6 for another host's MAC", with(v6("2001:db8:f0::2", "2001:db8:1::1"), l2(macOther)), DropNotForUs, classDrop},
		{"LSRR", with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{131, 7, 4, 198, 51, 100, 7, 0} }), DropSourceRoute, classDrop},
		{"SSRR", with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{1, 137, 7, 4, 198, 51, 100, 7} }), DropSourceRoute, classDrop},
		{"option past the header", with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{1, 1, 7, 9} }), DropBadHeader, classDrop},
		{"option of length 1", with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{68, 1, 0, 0} }), DropBadHeader, classDrop},
		{"fragment at offset 1", with(v4("192.0.2.1", "10.1.1.1"), mangle(func(b []byte) {
			b[14+6], b[14+7] = 0x20, 1 // MF, offset 1
			fixCheck(b)
		})), DropFragmentOffset, classDrop},
		{"over port 1's MTU with DF", with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.payload = 1400 }), DropMTU, classError},
		{"ipv6 over port 1's MTU", with(v6("2001:db8:f0::2", "2001:db8:1::1"), func(f *frame) { f.payload = 1400 }), DropMTU, classError},
		{"ttl 1", with(v4("192.0.2.1", "10.1.1.1"), hop(1)), DropTTLExpired, classError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in.build()
			f := bytes.Clone(in)
			port, _, reason, ok := a.Forward(0, f)
			if ok || reason != tt.reason {
				t.Fatalf("Forward = port %d, %v, %v; want not forwarded, %v", port, reason, ok, tt.reason)
			}
			if !bytes.Equal(f, in) {
				t.Errorf("a frame not forwarded was changed")
			}
			_, _, v := a.fib.Load().decide(a.rxMAC[0], bytes.Clone(in))
			c := verdicts[v].class
			if c == classLocal && (v == vLocal || v == vMulticast) {
				c = protoClass(in)
			}
			if c != tt.class {
				t.Errorf("class %d, want %d", c, tt.class)
			}
		})
	}
	// And what is close to them is forwarded.
	for _, ok := range []frame{
		v4("192.0.2.1", "10.1.1.1"), v4("192.0.2.1", "192.0.2.253"), v4("169.253.1.1", "10.1.1.1"),
		v4("240.0.0.1", "10.1.1.1"), // class E sources Linux forwards
		v4("192.0.2.1", "223.255.255.255"), v6("2001:db8:f0::2", "2001:db8:1::1"), v6("2001:db8:f0::2", "fec0::1"), v6("::ffff:192.0.2.1", "2001:db8:1::1"),
		with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{7, 7, 4, 0, 0, 0, 0, 0} }),  // record route
		with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.options = []byte{148, 4, 0, 0} }),            // router alert
		with(v4("192.0.2.1", "10.1.1.1"), func(f *frame) { f.payload = 1400 - 28 }),                       // at the MTU
		with(v6("2001:db8:f0::2", "2001:db8:1::1"), func(f *frame) { f.ttl, f.mangle = 254, icmp6(135) }), // ND with hop limit < 255
	} {
		if _, _, r, fwd := a.Forward(0, ok.build()); !fwd {
			t.Errorf("%v → %v: not forwarded (%v)", ok.from, ok.to, r)
		}
	}
}

// TestLocalNotLooped: a packet to the router's own address under a default route out of
// the port it came in on reaches the kernel at once. On the old code it was forwarded
// back to the gateway until its TTL ran out (the audit's TestAuditLocalAddressLoops: 63
// passes, 126 link crossings).
func TestLocalNotLooped(t *testing.T) {
	a, err := New(Config{
		Ports:  []net.HardwareAddr{macP0},
		Routes: []Route{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 0, NextHopMAC: macNH2}},
		Local:  []netip.Prefix{netip.MustParsePrefix("192.0.2.254/32")},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("192.0.2.254"), ttl: 64, payload: 32}.build()
	passes := 0
	for {
		_, _, r, ok := a.Forward(0, f)
		if !ok {
			if r != DropLocal {
				t.Errorf("after %d passes: %v, want local", passes, r)
			}
			break
		}
		passes++
		copy(f, macP0) // the gateway sends it back to the router
	}
	if passes != 0 {
		t.Errorf("a packet to the router's address was forwarded %d times", passes)
	}
}

// TestTrim: bytes past the IP packet are trimmed, as the kernel trims them, but the
// padding of a minimum frame stays. On the old code a 1450-byte frame whose packet is 36
// bytes left with its 1400 trailing bytes (the audit's TestAuditTrailing).
func TestTrim(t *testing.T) {
	a := routerApp(t)
	tests := []struct {
		name    string
		in      frame
		trail   int
		wantLen int
	}{
		{"ipv4 1400 trailing", frame{from: src4, to: netip.MustParseAddr("10.1.1.1"), payload: 8}, 1400, 60},
		{"ipv4 trailer past 60", frame{from: src4, to: netip.MustParseAddr("10.1.1.1"), payload: 32}, 4, 74},
		{"ipv4 padded minimum", frame{from: src4, to: netip.MustParseAddr("10.1.1.1"), payload: 0}, 18, 60},
		{"ipv6 trailing", frame{from: src6, to: netip.MustParseAddr("2001:db8:1::1"), payload: 8}, 100, 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.dst, tt.in.src, tt.in.ttl = macP0, macSrc, 64
			in := append(tt.in.build(), make([]byte, tt.trail)...)
			for i := len(in) - tt.trail; i < len(in); i++ {
				in[i] = 0xee
			}
			_, n, r, ok := a.Forward(0, bytes.Clone(in))
			if !ok || n != tt.wantLen {
				t.Fatalf("Forward = length %d, %v, %v; want forwarded with length %d", n, r, ok, tt.wantLen)
			}
			// Through Process, fast path or not.
			out := runBurst(t, a, [][]byte{in})
			if len(out.sent) != 1 || len(out.sent[0]) != tt.wantLen {
				t.Fatalf("Process sent %d frames, lengths %v; want one of %d", len(out.sent), lens(out.sent), tt.wantLen)
			}
		})
	}
}

// fixCheck recomputes the IPv4 header checksum of frame b.
func fixCheck(b []byte) {
	ihl := int(b[14]&0xf) * 4
	b[14+ipv4Check], b[14+ipv4Check+1] = 0, 0
	binary.BigEndian.PutUint16(b[14+ipv4Check:], ^checksum(b[14:14+ihl]))
}

func lens(fs [][]byte) (l []int) {
	for _, f := range fs {
		l = append(l, len(f))
	}
	return l
}

// TestNewRefusesReserved: no route or local address may lie inside a destination l3fwd
// never routes.
func TestNewRefusesReserved(t *testing.T) {
	ports := []net.HardwareAddr{macP0}
	for _, tt := range []struct {
		routes []string
		local  []string
		want   string
	}{
		{routes: []string{"224.0.0.0/24"}, want: "inside 224.0.0.0/4 (multicast)"},
		{routes: []string{"127.0.0.0/8"}, want: "inside 127.0.0.0/8 (loopback)"},
		{routes: []string{"169.254.1.0/24"}, want: "link-local"},
		{routes: []string{"ff02::/16"}, want: "multicast"},
		{routes: []string{"fe80::/64"}, want: "link-local"},
		{local: []string{"127.0.0.1/32"}, want: "loopback"},
		{local: []string{"10.0.0.1/32"}, routes: []string{"10.0.0.1/32"}, want: "same prefix as route 0"},
		{local: []string{"10.0.0.1/24"}, want: "bits set beyond"},
	} {
		var cfg Config
		cfg.Ports = ports
		for _, r := range tt.routes {
			cfg.Routes = append(cfg.Routes, Route{Prefix: netip.MustParsePrefix(r), NextHopMAC: macNH1})
		}
		for _, l := range tt.local {
			cfg.Local = append(cfg.Local, netip.MustParsePrefix(l))
		}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("routes %v local %v: %v, want an error with %q", tt.routes, tt.local, err, tt.want)
		}
	}
	// A covering route, a link-local address of the router's: fine.
	if _, err := New(Config{Ports: ports, Routes: []Route{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHopMAC: macNH1}, {Prefix: netip.MustParsePrefix("::/0"), NextHopMAC: macNH1}},
		Local: []netip.Prefix{netip.MustParsePrefix("169.254.0.1/32"), netip.MustParsePrefix("fe80::1/128")}}); err != nil {
		t.Error(err)
	}
}
