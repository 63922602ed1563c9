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

// checkL3fwdRouter checks forward.local and forward.police.
func (c *Config) checkL3fwdRouter(errs *fieldErrors) {
	f := &c.Forward
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
}
