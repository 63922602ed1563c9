package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// PoliceClasses are forward.police's keys (l3fwd only), the kernel exception path's
// classes: a map from class to its limit per poll thread. A class left out keeps l3fwd's
// default (control 10000/s burst 64, local 20000/s burst 128, error 1000/s burst 32).
//   - control: ARP, LLDP, IPv6 neighbour discovery, routing protocols (OSPF, BGP, BFD,
//     VRRP, IGMP, MLD, PIM, RIP, LDP) to the router;
//   - local: the rest of what is for the router itself (its addresses, multicast,
//     broadcast, link-local destinations);
//   - error: what the kernel answers with an ICMP error or forwards itself (no route,
//     TTL expired, over the MTU) and unknown EtherTypes.
var PoliceClasses = []string{"control", "local", "error"}

// PoliceRate is one class's limit: Rate frames a second on average, Burst at once.
type PoliceRate struct {
	Rate  int `mapstructure:"rate"`
	Burst int `mapstructure:"burst"`
}

// ParseLocal parses an entry of forward.local: an address (a /32 or /128) or a prefix
// with no bits set beyond its length.
func ParseLocal(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("an address with a zone (%%%s): give the address alone", a.Zone())
		}
		if a.Is4In6() {
			return netip.Prefix{}, fmt.Errorf("an IPv4-mapped IPv6 address: write it as IPv4 (%v)", a.Unmap())
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	if !strings.Contains(s, "/") {
		return netip.Prefix{}, fmt.Errorf("not an address or prefix (want 192.0.2.254, 2001:db8::1 or ADDR/LEN)")
	}
	return ParsePrefix(s)
}

// The route limits' defaults (forward.max_routes, max_routes6: the same as l3fwd's
// DefaultMaxRoutes4 and 6, room for a full Internet table of each family) and the most
// they may be (the LPM tables number their groups of 256 entries in 22 bits).
const (
	DefaultMaxRoutes  = 1 << 20
	DefaultMaxRoutes6 = 1 << 19
	MaxMaxRoutes      = 1 << 22
)

// RouteLimits are forward.max_routes and max_routes6 with their defaults applied.
func (f *Forward) RouteLimits() (v4, v6 int) {
	v4, v6 = f.MaxRoutes, f.MaxRoutes6
	if v4 == 0 {
		v4 = DefaultMaxRoutes
	}
	if v6 == 0 {
		v6 = DefaultMaxRoutes6
	}
	return v4, v6
}

// checkRouteLimits checks forward.max_routes and max_routes6, and that the static routes
// and local addresses of each family fit them.
func (c *Config) checkRouteLimits(errs *fieldErrors) {
	f := &c.Forward
	for _, k := range []struct {
		key string
		v   int
	}{{"forward.max_routes", f.MaxRoutes}, {"forward.max_routes6", f.MaxRoutes6}} {
		if k.v < 0 || k.v > MaxMaxRoutes {
			errs.add(k.key, k.v, "want 1 to %d (0 or absent: the default)", MaxMaxRoutes)
		}
	}
	max4, max6 := f.RouteLimits()
	var n4, n6 int
	count := func(p netip.Prefix) {
		if p.Addr().Is4() {
			n4++
		} else {
			n6++
		}
	}
	for _, r := range f.Routes {
		if p, err := ParsePrefix(r.Prefix); err == nil {
			count(p)
		}
	}
	for _, s := range f.Local {
		if p, err := ParseLocal(s); err == nil {
			count(p)
		}
	}
	if n4 > max4 && f.MaxRoutes >= 0 {
		errs.add("forward.routes", nil, "%d IPv4 routes and local addresses, over forward.max_routes (%d)", n4, max4)
	}
	if n6 > max6 && f.MaxRoutes6 >= 0 {
		errs.add("forward.routes", nil, "%d IPv6 routes and local addresses, over forward.max_routes6 (%d)", n6, max6)
	}
}

// checkL3fwdRouter checks forward.local, forward.police and the route limits.
func (c *Config) checkL3fwdRouter(errs *fieldErrors) {
	f := &c.Forward
	c.checkRouteLimits(errs)
	seen := map[netip.Prefix]int{}
	for i, s := range f.Local {
		path := fmt.Sprintf("forward.local[%d]", i)
		p, err := ParseLocal(s)
		if err != nil {
			errs.add(path, s, "%v", err)
			continue
		}
		if j, dup := seen[p]; dup {
			errs.add(path, s, "same address as forward.local[%d]", j)
			continue
		}
		seen[p] = i
	}
	for name, r := range f.Police {
		path := "forward.police." + name
		if !slices.Contains(PoliceClasses, name) {
			errs.add(path, nil, "unknown class (want %s)", strings.Join(PoliceClasses, ", "))
			continue
		}
		if r.Rate < 1 || r.Rate > 1e9 {
			errs.add(path+".rate", r.Rate, "want 1 to 1000000000 frames a second")
		}
		if r.Burst < 1 || r.Burst > 1<<20 {
			errs.add(path+".burst", r.Burst, "want 1 to 1048576 frames")
		}
	}
}

// checkNotL3fwdRouter refuses forward.local and forward.police in the other modes.
func (c *Config) checkNotL3fwdRouter(errs *fieldErrors) {
	if len(c.Forward.Local) > 0 {
		errs.add("forward.local", nil, "local addresses only apply to forward.mode l3fwd")
	}
	if len(c.Forward.Police) > 0 {
		errs.add("forward.police", nil, "the exception path's policer only applies to forward.mode l3fwd")
	}
	if c.Forward.MaxRoutes != 0 {
		errs.add("forward.max_routes", c.Forward.MaxRoutes, "only applies to forward.mode l3fwd")
	}
	if c.Forward.MaxRoutes6 != 0 {
		errs.add("forward.max_routes6", c.Forward.MaxRoutes6, "only applies to forward.mode l3fwd")
	}
}
