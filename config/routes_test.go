package config

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// l3fwdDoc is simPorts in l3fwd mode with the given routes (YAML flow items).
func l3fwdDoc(routes ...string) string {
	doc := simPorts + "forward:\n  mode: l3fwd\n  routes:\n"
	for _, r := range routes {
		doc += "    - " + r + "\n"
	}
	return doc
}

func TestRoutes(t *testing.T) {
	c, err := read(t, l3fwdDoc(`{prefix: 10.1.0.0/16, port: b, next_hop_mac: "02:00:00:00:00:01"}`,
		`{prefix: 0.0.0.0/0, port: a, next_hop_mac: "02:00:00:00:00:02"}`,
		`{prefix: "2001:db8::/32", port: b, next_hop_mac: "02-00-00-00-00-03"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Forward.Routes); got != 3 {
		t.Fatalf("%d routes", got)
	}
	p, m, err := ParseRoute(c.Forward.Routes[2])
	if err != nil || p != netip.MustParsePrefix("2001:db8::/32") || m.String() != "02:00:00:00:00:03" {
		t.Errorf("ParseRoute = %v, %v, %v", p, m, err)
	}
	if c.ForwardPairs() != nil {
		t.Error("l3fwd has forward pairs")
	}
}

// TestBadRoutes: each bad route gets one error on its own path.
func TestBadRoutes(t *testing.T) {
	ok := `{prefix: 10.0.0.0/8, port: a, next_hop_mac: "02:00:00:00:00:01"}`
	wantOneErrors(t, []oneError{
		{"no routes", l3fwdDoc(), "forward.routes", "at least one route"},
		{"malformed prefix", l3fwdDoc(`{prefix: 10.0.0/8, port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "not a prefix"},
		{"no length", l3fwdDoc(`{prefix: 10.0.0.0, port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "not a prefix"},
		{"length too long", l3fwdDoc(`{prefix: 10.0.0.0/33, port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "not a prefix"},
		{"host bits", l3fwdDoc(`{prefix: 10.1.2.3/16, port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "the prefix is 10.1.0.0/16"},
		{"mapped", l3fwdDoc(`{prefix: "::ffff:10.0.0.0/104", port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "write it as IPv4 (10.0.0.0/8)"},
		{"zone", l3fwdDoc(`{prefix: "fe80::%eth0/64", port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].prefix", "not a prefix"},
		{"duplicate", l3fwdDoc(ok, `{prefix: 10.0.0.0/8, port: b, next_hop_mac: "02:00:00:00:00:02"}`), "forward.routes[1].prefix", "same prefix as forward.routes[0]"},
		{"duplicate v6 spelling", l3fwdDoc(`{prefix: "2001:db8::/32", port: a, next_hop_mac: "02:00:00:00:00:01"}`, `{prefix: "2001:0db8:0::/32", port: a, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[1].prefix", "same prefix"},
		{"unknown port", l3fwdDoc(`{prefix: 10.0.0.0/8, port: xe9, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].port", "no port has this name"},
		{"no port", l3fwdDoc(`{prefix: 10.0.0.0/8, next_hop_mac: "02:00:00:00:00:01"}`), "forward.routes[0].port", "required"},
		{"multicast mac", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a, next_hop_mac: "01:00:5e:00:00:01"}`), "forward.routes[0].next_hop_mac", "multicast"},
		{"broadcast mac", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a, next_hop_mac: "ff:ff:ff:ff:ff:ff"}`), "forward.routes[0].next_hop_mac", "broadcast"},
		{"zero mac", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a, next_hop_mac: "00:00:00:00:00:00"}`), "forward.routes[0].next_hop_mac", "zero"},
		{"eui-64 mac", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a, next_hop_mac: "02:00:00:00:00:00:00:01"}`), "forward.routes[0].next_hop_mac", "six bytes"},
		{"no mac", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a}`), "forward.routes[0].next_hop_mac", "required"},
		{"unknown route key", l3fwdDoc(`{prefix: 10.0.0.0/8, port: a, next_hop_mac: "02:00:00:00:00:01", nexthop: x}`), "forward.routes[0].nexthop", "unknown key"},
		{"pairs in l3fwd", l3fwdDoc(ok) + "  pairs: [[a, b]]\n", "forward.pairs", "only apply to l2fwd"},
		{"routes in l2fwd", simPorts + "forward:\n  routes: [" + ok + "]\n", "forward.routes", "only apply to forward.mode l3fwd"},
		{"tx queues below threads", strings.Replace(l3fwdDoc(ok), `wire: "pair:a"`, `wire: "pair:a", tx_queues: 2`, 1) + "poll: {cpus: [0, 1]}\n",
			"ports[1].tx_queues", "fewer than the 2 poll threads"},
	})
}

func TestParseRouteFields(t *testing.T) {
	testutil.CheckParseCases(t, "ParsePrefix", ParsePrefix, []testutil.ParseCase[netip.Prefix]{
		{In: "10.1.0.0/16", Want: netip.MustParsePrefix("10.1.0.0/16")},
		{In: "0.0.0.0/0", Want: netip.MustParsePrefix("0.0.0.0/0")},
		{In: "::/0", Want: netip.MustParsePrefix("::/0")},
		{In: "10.1.2.3/32", Want: netip.MustParsePrefix("10.1.2.3/32")},
		{In: "10.1.2.3/31", Err: "10.1.2.2/31"},
		{In: "", Err: "not a prefix"},
		{In: "10.1.0.0/-1", Err: "not a prefix"},
	})
	mac := func(s string) (string, error) {
		m, err := ParseNextHopMAC(s)
		return m.String(), err
	}
	testutil.CheckParseCases(t, "ParseNextHopMAC", mac, []testutil.ParseCase[string]{
		{In: "02:00:00:00:00:01", Want: "02:00:00:00:00:01"},
		{In: "0200.0000.0001", Want: "02:00:00:00:00:01"},
		{In: "03:00:00:00:00:01", Err: "multicast"},
		{In: "x", Err: "not a MAC"},
	})
}

// FuzzParseRoute: the route parser never panics, and what it accepts is a masked prefix
// that prints back to itself and a unicast six-byte MAC.
func FuzzParseRoute(f *testing.F) {
	for _, s := range [][2]string{{"10.1.0.0/16", "02:00:00:00:00:01"}, {"::/0", "0200.0000.0001"}, {"::ffff:1.2.3.4/128", "ff:ff:ff:ff:ff:ff"}, {"1.2.3.4/33", "01-00-5e-00-00-01"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, mac string) {
		p, m, err := ParseRoute(Route{Prefix: prefix, NextHopMAC: mac})
		if err != nil {
			return
		}
		if p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			t.Fatalf("%q accepted as %v", prefix, p)
		}
		if back, err := ParsePrefix(p.String()); err != nil || back != p {
			t.Fatalf("%v does not parse back: %v, %v", p, back, err)
		}
		if len(m) != 6 || m[0]&1 != 0 || [6]byte(m) == [6]byte{} {
			t.Fatalf("%q accepted as %v", mac, m)
		}
		if back, err := ParseNextHopMAC(m.String()); err != nil || back.String() != m.String() {
			t.Fatalf("%v does not parse back", net.HardwareAddr(m))
		}
	})
}
