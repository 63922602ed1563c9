package config

import (
	"net/netip"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestL3fwdRouterKeys(t *testing.T) {
	ok := `{prefix: 0.0.0.0/0, port: a, next_hop_mac: "02:00:00:00:00:01"}`
	c, err := read(t, l3fwdDoc(ok)+"  local: [192.0.2.254, \"2001:db8::1\", 192.0.2.255/32]\n  police: {control: {rate: 5000, burst: 16}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Forward.Local) != 3 || c.Forward.Police["control"] != (PoliceRate{Rate: 5000, Burst: 16}) || len(c.Forward.Police) != 1 {
		t.Errorf("forward %+v", c.Forward)
	}
	wantOneErrors(t, []oneError{
		{"bad local", l3fwdDoc(ok) + "  local: [192.0.2]\n", "forward.local[0]", "not an address or prefix"},
		{"duplicate local", l3fwdDoc(ok) + "  local: [192.0.2.1, 192.0.2.1/32]\n", "forward.local[1]", "same address as forward.local[0]"},
		{"zero rate", l3fwdDoc(ok) + "  police: {error: {rate: 0, burst: 4}}\n", "forward.police.error.rate", "want 1 to"},
		{"huge burst", l3fwdDoc(ok) + "  police: {local: {rate: 10, burst: 2000000}}\n", "forward.police.local.burst", "want 1 to"},
		{"unknown police key", l3fwdDoc(ok) + "  police: {junk: {rate: 10}}\n", "forward.police.junk", "unknown class (want control, local, error)"},
		{"local in l2fwd", simPorts + "forward:\n  local: [192.0.2.1]\n", "forward.local", "only apply to forward.mode l3fwd"},
		{"police in l2fwd", simPorts + "forward:\n  police: {error: {rate: 1, burst: 1}}\n", "forward.police", "only applies to forward.mode l3fwd"},
	})
}

func TestParseLocal(t *testing.T) {
	testutil.CheckParseCases(t, "ParseLocal", ParseLocal, []testutil.ParseCase[netip.Prefix]{
		{In: "192.0.2.254", Want: netip.MustParsePrefix("192.0.2.254/32")},
		{In: "2001:db8::1", Want: netip.MustParsePrefix("2001:db8::1/128")},
		{In: "192.0.2.255/32", Want: netip.MustParsePrefix("192.0.2.255/32")},
		{In: "10.0.0.0/8", Want: netip.MustParsePrefix("10.0.0.0/8")},
		{In: "10.0.0.1/8", Err: "the prefix is 10.0.0.0/8"},
		{In: "fe80::1%eth0", Err: "zone"},
		{In: "::ffff:1.2.3.4", Err: "write it as IPv4 (1.2.3.4)"},
		{In: "", Err: "not an address"},
	})
}

// FuzzParseLocal: what ParseLocal accepts is a masked prefix without zone or mapping.
func FuzzParseLocal(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "2001:db8::/32", "fe80::1%x", "::ffff:1.2.3.4", "1.2.3.4/33"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseLocal(s)
		if err != nil {
			return
		}
		if !p.IsValid() || p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			t.Fatalf("%q accepted as %v", s, p)
		}
	})
}

func TestL3fwdPoliceUnknownField(t *testing.T) {
	ok := `{prefix: 0.0.0.0/0, port: a, next_hop_mac: "02:00:00:00:00:01"}`
	_, err := read(t, l3fwdDoc(ok)+"  police: {error: {rate: 5, burst: 1, rat: 5}}\n")
	wantOneError(t, err, "forward.police[error]", "invalid keys: rat")
}

// TestRouteLimits: forward.max_routes and max_routes6 default to a full Internet table,
// take 1 to MaxMaxRoutes, and static routes and local addresses over them are an error
// naming forward.routes and the limit; they apply to l3fwd only.
func TestRouteLimits(t *testing.T) {
	r4 := `{prefix: 10.1.0.0/16, port: a, next_hop_mac: "02:00:00:00:00:01"}`
	r4b := `{prefix: 10.2.0.0/16, port: a, next_hop_mac: "02:00:00:00:00:01"}`
	r6 := `{prefix: "2001:db8::/32", port: a, next_hop_mac: "02:00:00:00:00:01"}`
	c, err := read(t, l3fwdDoc(r4))
	if err != nil {
		t.Fatal(err)
	}
	if v4, v6 := c.Forward.RouteLimits(); v4 != 1048576 || v6 != 524288 {
		t.Errorf("defaults %d, %d", v4, v6)
	}
	c, err = read(t, l3fwdDoc(r4, r4b, r6)+"  max_routes: 2\n  max_routes6: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if v4, v6 := c.Forward.RouteLimits(); v4 != 2 || v6 != 1 {
		t.Errorf("limits %d, %d", v4, v6)
	}
	wantOneErrors(t, []oneError{
		{"v4 over", l3fwdDoc(r4, r4b) + "  max_routes: 1\n", "forward.routes", "2 IPv4 routes and local addresses, over forward.max_routes (1)"},
		{"local counts", l3fwdDoc(r4, r6) + "  local: [\"2001:db8::1\"]\n  max_routes6: 1\n", "forward.routes", "2 IPv6 routes and local addresses, over forward.max_routes6 (1)"},
		{"negative", l3fwdDoc(r4) + "  max_routes: -1\n", "forward.max_routes", "want 1 to 4194304"},
		{"too many", l3fwdDoc(r4) + "  max_routes6: 4194305\n", "forward.max_routes6", "want 1 to 4194304"},
		{"l2fwd", simPorts + "forward:\n  max_routes: 10\n", "forward.max_routes", "only applies to forward.mode l3fwd"},
	})
}
