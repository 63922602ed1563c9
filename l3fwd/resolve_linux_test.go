package l3fwd

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// The router's addresses on port 0's link, which its neighbours resolve and ping.
var (
	router4 = netip.MustParseAddr("192.0.2.254")
	router6 = netip.MustParseAddr("2001:db8:f0::1")
)

// arpRequest asks for router4's MAC from src4Gen.
func arpRequest() []byte {
	b := append(append([]byte{}, macBcast...), macGen...)
	b = append(b, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1)
	b = append(append(b, macGen...), src4Gen.AsSlice()...)
	b = append(append(b, make([]byte, 6)...), router4.AsSlice()...)
	return append(b, make([]byte, 60-len(b))...)
}

// icmpFrame is an ICMP (IPv4) or ICMPv6 message msg from the generator to dst with the
// given hop limit, its checksum filled in, to the Ethernet address mac.
func icmpFrame(mac []byte, src, dst netip.Addr, hop uint8, msg []byte) []byte {
	b := append(append([]byte{}, mac...), macGen...)
	msg = bytes.Clone(msg)
	if dst.Is4() {
		h := make([]byte, ipv4Header)
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[ipv4TotLen:], uint16(ipv4Header+len(msg)))
		h[ipv4TTL], h[9] = hop, 1
		copy(h[12:], src.AsSlice())
		copy(h[ipv4Dst:], dst.AsSlice())
		binary.BigEndian.PutUint16(h[ipv4Check:], ^checksum(h))
		binary.BigEndian.PutUint16(msg[2:], ^checksum(pad4(msg)))
		return append(append(binary.BigEndian.AppendUint16(b, etherIPv4), h...), msg...)
	}
	h := make([]byte, ipv6Header)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[ipv6PayLen:], uint16(len(msg)))
	h[6], h[ipv6HopLim] = 58, hop
	copy(h[8:], src.AsSlice())
	copy(h[ipv6Dst:], dst.AsSlice())
	var ph []byte
	ph = append(append(ph, src.AsSlice()...), dst.AsSlice()...)
	ph = binary.BigEndian.AppendUint32(ph, uint32(len(msg)))
	ph = append(append(ph, 0, 0, 0, 58), msg...)
	binary.BigEndian.PutUint16(msg[2:], ^checksum(pad4(ph)))
	return append(append(binary.BigEndian.AppendUint16(b, etherIPv6), h...), msg...)
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// neighbourSolicitation asks for router6's MAC, to its solicited-node group.
func neighbourSolicitation() []byte {
	group := netip.MustParseAddr("ff02::1:ff00:1")
	msg := append([]byte{135, 0, 0, 0, 0, 0, 0, 0}, router6.AsSlice()...)
	msg = append(append(msg, 1, 1), macGen...) // source link-layer address
	return icmpFrame([]byte{0x33, 0x33, 0xff, 0, 0, 1}, src6Gen, group, 255, msg)
}

func echo(dst netip.Addr) []byte {
	typ := byte(8)
	if dst.Is6() {
		typ = 128
	}
	msg := []byte{typ, 0, 0, 0, 0x42, 0x42, 0, 1, 'u', 'i', 'o', 'd'}
	src := src4Gen
	if dst.Is6() {
		src = src6Gen
	}
	return icmpFrame(macP0, src, dst, 64, msg)
}

// reply classifies what a router sent back: an ARP reply for router4, a neighbour
// advertisement for router6, an echo reply to echo's identifier; "" for anything else.
func reply(f []byte) string {
	switch {
	case len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0806 && f[21] == 2 && bytes.Equal(f[28:32], router4.AsSlice()):
		return "arp"
	case len(f) < 14+ipv4Header+8:
	case binary.BigEndian.Uint16(f[12:]) == etherIPv4 && f[14+9] == 1:
		if m := f[14+int(f[14]&0xf)*4:]; m[0] == 0 && m[4] == 0x42 {
			return "echo"
		}
	case binary.BigEndian.Uint16(f[12:]) == etherIPv6 && f[14+6] == 58 && len(f) >= 14+ipv6Header+8:
		m := f[14+ipv6Header:]
		switch {
		case m[0] == 136 && len(m) >= 24 && bytes.Equal(m[8:24], router6.AsSlice()):
			return "na"
		case m[0] == 129 && m[4] == 0x42:
			return "echo6"
		}
	}
	return ""
}

// checkResolve: the generator resolves the router's addresses (ARP, and IPv6 neighbour
// discovery to the solicited-node group) and pings them, through the reference kernel
// (g0) and through uiod (g2), whose l3fwd hands the requests to its kernel path (control
// and local classes); both answer each. On the old code uiod forwarded the solicitation
// under the default route and the pings to the gateway.
func checkResolve(t *testing.T, app *App, ends []wire.Port, seen [][][]byte, mu *sync.Mutex) {
	t.Helper()
	before := app.Stats()
	for _, f := range [][]byte{arpRequest(), neighbourSolicitation(), echo(router4), echo(router6)} {
		for _, e := range []wire.Port{ends[0], ends[2]} {
			if err := e.Send(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"arp", "na", "echo", "echo6"}
	got := func(end int) map[string]int {
		mu.Lock()
		defer mu.Unlock()
		m := map[string]int{}
		for _, f := range seen[end] {
			if r := reply(f); r != "" {
				m[r]++
			}
		}
		return m
	}
	ok := testutil.WaitFor(5*time.Second, func() bool {
		for _, end := range []int{0, 2} {
			for _, w := range want {
				if got(end)[w] == 0 {
					return false
				}
			}
		}
		return true
	})
	if !ok {
		t.Errorf("replies to ARP, ND and pings: from the kernel %v, through uiod %v; want one of each of %v", got(0), got(2), want)
	}
	after := app.Stats()
	if d := after.Classes[classControl].ToKernel - before.Classes[classControl].ToKernel; d < 2 {
		t.Errorf("l3fwd handed %d control frames (ARP, NS) to its kernel path, want 2", d)
	}
	if d := after.Classes[classLocal].ToKernel - before.Classes[classLocal].ToKernel; d < 2 {
		t.Errorf("l3fwd handed %d local frames (pings to its addresses) to its kernel path, want 2", d)
	}
}
