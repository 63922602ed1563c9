package l3fwd

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/uiod/uiod/dataplane"
)

var (
	macP0  = net.HardwareAddr{0x02, 0, 0, 0, 0xaa, 0}
	macP1  = net.HardwareAddr{0x02, 0, 0, 0, 0xaa, 1}
	macNH1 = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 1}
	macNH2 = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 2}
	macSrc = net.HardwareAddr{0x02, 0, 0, 0, 0xcc, 0}
)

func testApp(t testing.TB) *App {
	t.Helper()
	a, err := New(Config{
		Ports: []net.HardwareAddr{macP0, macP1},
		Routes: []Route{
			{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: macNH1},
			{Prefix: netip.MustParsePrefix("10.1.2.3/32"), Port: 0, NextHopMAC: macNH2},
			{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 0, NextHopMAC: macNH2},
			{Prefix: netip.MustParsePrefix("2001:db8:1::/48"), Port: 1, NextHopMAC: macNH1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	src4 = netip.MustParseAddr("192.0.2.1")
	src6 = netip.MustParseAddr("2001:db8:ff::1")
)

func TestForward(t *testing.T) {
	a := testApp(t)
	v4 := func(to string, ttl uint8) frame {
		return frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr(to), ttl: ttl, payload: 32}
	}
	v6 := func(to string, ttl uint8) frame {
		return frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr(to), ttl: ttl, payload: 32}
	}
	with := func(f frame, m func(*frame)) frame { m(&f); return f }
	tests := []struct {
		name   string
		in     frame
		port   dataplane.PortID
		reason dataplane.DropReason // 0: forwarded
		nhMAC  net.HardwareAddr
	}{
		{"ttl 64 /16", v4("10.1.9.9", 64), 1, 0, macNH1},
		{"host route /32", v4("10.1.2.3", 64), 0, 0, macNH2},
		{"default route", v4("198.51.100.7", 64), 0, 0, macNH2},
		{"ttl 2 forwarded", v4("10.1.9.9", 2), 1, 0, macNH1},
		{"ttl 1", v4("10.1.9.9", 1), 0, DropTTLExpired, nil},
		{"ttl 0", v4("10.1.9.9", 0), 0, DropTTLExpired, nil},
		{"ip options", with(v4("10.1.9.9", 64), func(f *frame) { f.options = []byte{1, 1, 1, 0} }), 1, 0, macNH1},
		{"bad checksum", with(v4("10.1.9.9", 64), func(f *frame) { f.badCheck = true }), 0, DropBadHeader, nil},
		{"version 5", with(v4("10.1.9.9", 64), func(f *frame) { f.mangle = func(b []byte) { b[14] = 0x55 } }), 0, DropBadHeader, nil},
		{"ihl 4", with(v4("10.1.9.9", 64), func(f *frame) { f.mangle = func(b []byte) { b[14] = 0x44 } }), 0, DropBadHeader, nil},
		{"ihl past frame", with(v4("10.1.9.9", 64), func(f *frame) { f.payload = 0; f.mangle = func(b []byte) { b[14] = 0x4f } }), 0, DropBadHeader, nil},
		{"total length past frame", with(v4("10.1.9.9", 64), func(f *frame) { f.mangle = func(b []byte) { b[16] = 0xff } }), 0, DropBadHeader, nil},
		{"total length below header", with(v4("10.1.9.9", 64), func(f *frame) { f.mangle = func(b []byte) { b[16], b[17] = 0, 19 } }), 0, DropBadHeader, nil},
		{"ipv6 hop limit 64", v6("2001:db8:1::9", 64), 1, 0, macNH1},
		{"ipv6 hop limit 1", v6("2001:db8:1::9", 1), 0, DropTTLExpired, nil},
		{"ipv6 no route", v6("2001:db8:2::9", 64), 0, DropNoRoute, nil},
		{"ipv6 version 4", with(v6("2001:db8:1::9", 64), func(f *frame) { f.mangle = func(b []byte) { b[14] = 0x40 } }), 0, DropBadHeader, nil},
		{"ipv6 payload past frame", with(v6("2001:db8:1::9", 64), func(f *frame) { f.mangle = func(b []byte) { b[19] = 0xff } }), 0, DropBadHeader, nil},
		{"arp", frame{dst: macP0, src: macSrc, etherType: 0x0806}, 0, DropNotIP, nil},
		{"vlan", frame{dst: macP0, src: macSrc, etherType: 0x8100}, 0, DropNotIP, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in.build()
			f := bytes.Clone(in)
			port, n, reason, ok := a.Forward(0, f)
			if tt.reason != 0 {
				if ok || reason != tt.reason {
					t.Fatalf("Forward = %d, %v, %v, want not forwarded, %v", port, reason, ok, tt.reason)
				}
				if !bytes.Equal(f, in) {
					t.Errorf("a frame not forwarded was changed:\n% x\n% x", in, f)
				}
				return
			}
			if !ok || port != tt.port {
				t.Fatalf("Forward = %d, %v, %v, want port %d", port, reason, ok, tt.port)
			}
			want := bytes.Clone(in)
			copy(want[0:6], tt.nhMAC)
			copy(want[6:12], []net.HardwareAddr{macP0, macP1}[port])
			if tt.in.to.Is4() {
				want[14+ipv4TTL]--
				ihl := int(want[14]&0xf) * 4
				binary.BigEndian.PutUint16(want[14+ipv4Check:], 0)
				binary.BigEndian.PutUint16(want[14+ipv4Check:], ^checksum(want[14:14+ihl]))
			} else {
				want[14+ipv6HopLim]--
			}
			if n != len(f) || !bytes.Equal(f, want) {
				t.Errorf("forwarded frame (length %d)\n got % x\nwant % x", n, f, want)
			}
		})
	}
	if _, _, r, ok := a.Forward(0, make([]byte, 13)); ok || r != DropNotIP {
		t.Errorf("runt: %v %v", r, ok)
	}
	b := v4("10.1.9.9", 64).build()
	if _, _, r, ok := a.Forward(0, b[:14+19]); ok || r != DropBadHeader {
		t.Errorf("short IPv4 header: %v %v", r, ok)
	}
}

// TestNoRoute: without a default route, an uncovered IPv4 destination is no_route.
func TestNoRoute(t *testing.T) {
	a, err := New(Config{Ports: []net.HardwareAddr{macP0}, Routes: []Route{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), NextHopMAC: macNH1}}})
	if err != nil {
		t.Fatal(err)
	}
	f := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("11.0.0.1"), ttl: 64, payload: 8}.build()
	if _, _, r, ok := a.Forward(0, f); ok || r != DropNoRoute {
		t.Errorf("Forward = %v, %v, want no_route", r, ok)
	}
}

// decTTL1624 is RFC 1624's equation 3 as written: HC' = ~(~HC + ~m + m').
func decTTL1624(hc, m, m2 uint16) uint16 {
	sum := uint32(^hc) + uint32(^m) + uint32(m2)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}

// TestDecTTL: the incremental update equals equation 3 for every checksum value and
// every TTL, and a full recomputation on random headers.
func TestDecTTL(t *testing.T) {
	var h [ipv4Header]byte
	for hc := range 1 << 16 {
		for _, ttl := range []byte{1, 2, 64, 255} {
			h[ipv4TTL], h[9] = ttl, 17
			binary.BigEndian.PutUint16(h[ipv4Check:], uint16(hc))
			m := binary.BigEndian.Uint16(h[ipv4TTL:])
			decTTL(&h)
			if got, want := binary.BigEndian.Uint16(h[ipv4Check:]), decTTL1624(uint16(hc), m, m-0x100); got != want {
				t.Fatalf("checksum %04x, TTL %d: decTTL gives %04x, RFC 1624 eqn. 3 %04x", hc, ttl, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		for i := range h {
			h[i] = byte(r.Uint32())
		}
		h[0] = 0x45
		h[ipv4TTL] = byte(r.IntN(255) + 1)
		binary.BigEndian.PutUint16(h[ipv4Check:], 0)
		binary.BigEndian.PutUint16(h[ipv4Check:], ^checksum(h[:]))
		decTTL(&h)
		if c := checksum(h[:]); c != 0xffff {
			t.Fatalf("header % x after decTTL sums to %04x", h, c)
		}
	}
}

// TestSumOK: sumOK over little-endian 32-bit words agrees with the folded big-endian
// checksum, on random headers with right and wrong checksums.
func TestSumOK(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 200000 {
		h := make([]byte, 4*(5+r.IntN(11)))
		for j := range h {
			h[j] = byte(r.Uint32())
		}
		h[0] = 0x40 | byte(len(h)/4)
		if i%2 == 0 {
			binary.BigEndian.PutUint16(h[ipv4Check:], 0)
			binary.BigEndian.PutUint16(h[ipv4Check:], ^checksum(h))
		}
		var sum uint64
		for j := 0; j < len(h); j += 4 {
			sum += uint64(binary.LittleEndian.Uint32(h[j:]))
		}
		if got, want := sumOK(sum), checksum(h) == 0xffff; got != want {
			t.Fatalf("header % x: sumOK %v, checksum %04x", h, got, checksum(h))
		}
	}
}

func TestNewErrors(t *testing.T) {
	ports := []net.HardwareAddr{macP0}
	pfx := netip.MustParsePrefix("10.0.0.0/8")
	tests := []struct {
		name  string
		cfg   Config
		wants string
	}{
		{"host bits", Config{Ports: ports, Routes: []Route{{Prefix: netip.MustParsePrefix("10.0.0.1/8"), NextHopMAC: macNH1}}}, "bits set beyond"},
		{"no prefix", Config{Ports: ports, Routes: []Route{{NextHopMAC: macNH1}}}, "no prefix"},
		{"unknown port", Config{Ports: ports, Routes: []Route{{Prefix: pfx, Port: 1, NextHopMAC: macNH1}}}, "port 1"},
		{"multicast MAC", Config{Ports: ports, Routes: []Route{{Prefix: pfx, NextHopMAC: net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}}}}, "not unicast"},
		{"broadcast MAC", Config{Ports: ports, Routes: []Route{{Prefix: pfx, NextHopMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}}}, "not unicast"},
		{"zero MAC", Config{Ports: ports, Routes: []Route{{Prefix: pfx, NextHopMAC: make(net.HardwareAddr, 6)}}}, "zero"},
		{"short MAC", Config{Ports: ports, Routes: []Route{{Prefix: pfx, NextHopMAC: macNH1[:5]}}}, "6 bytes"},
		{"duplicate", Config{Ports: ports, Routes: []Route{{Prefix: pfx, NextHopMAC: macNH1}, {Prefix: pfx, NextHopMAC: macNH2}}}, "same prefix as route 0"},
		{"mapped", Config{Ports: ports, Routes: []Route{{Prefix: netip.MustParsePrefix("::ffff:10.0.0.0/104"), NextHopMAC: macNH1}}}, "not an IPv4 or IPv6"},
		{"port MAC", Config{Ports: []net.HardwareAddr{macP0[:4]}}, "not 6 bytes"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.wants) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.wants)
		}
	}
}

// TestForwardAllocs: Forward allocates nothing, forwarded or not.
func TestForwardAllocs(t *testing.T) {
	a := testApp(t)
	frames := [][]byte{
		frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.2.3"), ttl: 255, payload: 32}.build(),
		frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:1::1"), ttl: 255, payload: 32}.build(),
		frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:2::1"), ttl: 255, payload: 32}.build(),
		frame{dst: macP0, src: macSrc, etherType: 0x0806}.build(),
	}
	if n := testing.AllocsPerRun(200, func() {
		for _, f := range frames {
			a.Forward(0, f)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

// FuzzForward: any frame, forwarded or not, never panics (so never reads or writes out of
// bounds), keeps its length, is left unchanged when refused, and leaves with a valid IPv4
// header checksum and one less TTL when forwarded.
func FuzzForward(f *testing.F) {
	a := testApp(f)
	f.Add(frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.2.3"), ttl: 9, payload: 4}.build())
	f.Add(frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.2.3"), ttl: 9, options: []byte{1, 1, 1, 1}}.build())
	f.Add(frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:1::1"), ttl: 9}.build())
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x4f})
	f.Fuzz(func(t *testing.T, in []byte) {
		b := bytes.Clone(in)
		_, n, _, ok := a.Forward(0, b)
		if len(b) != len(in) || n > len(in) || ok && n < min(len(in), minFrame) {
			t.Fatalf("length %d, from %d", n, len(in))
		}
		if !ok {
			if !bytes.Equal(b, in) {
				t.Fatal("refused frame changed")
			}
			return
		}
		switch binary.BigEndian.Uint16(in[12:]) {
		case etherIPv4:
			ihl := int(in[14]&0xf) * 4
			if checksum(b[14:14+ihl]) != 0xffff || b[14+ipv4TTL] != in[14+ipv4TTL]-1 {
				t.Fatalf("forwarded header % x from % x", b[14:14+ihl], in[14:14+ihl])
			}
		case etherIPv6:
			if b[14+ipv6HopLim] != in[14+ipv6HopLim]-1 {
				t.Fatal("hop limit not decremented")
			}
		default:
			t.Fatal("forwarded a frame that is not IP")
		}
		if !bytes.Equal(b[14:], in[14:]) && binary.BigEndian.Uint16(in[12:]) == etherIPv6 {
			if !bytes.Equal(b[14:14+ipv6HopLim], in[14:14+ipv6HopLim]) || !bytes.Equal(b[14+ipv6HopLim+1:], in[14+ipv6HopLim+1:]) {
				t.Fatal("IPv6 frame changed beyond its hop limit")
			}
		}
	})
}
