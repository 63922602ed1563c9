package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ForwardL3fwd is forward.mode for the router: each frame leaves by the port of the
// longest forward.routes prefix covering its destination.
const ForwardL3fwd = "l3fwd"

// Route is one entry of forward.routes (l3fwd only).
type Route struct {
	// Prefix is the destination, IPv4 or IPv6, in ADDR/LEN form with no bits set
	// beyond LEN (0.0.0.0/0 and ::/0 are the default routes).
	Prefix string `mapstructure:"prefix"`
	// Port is the name of the output port.
	Port string `mapstructure:"port"`
	// NextHopMAC is the neighbour's MAC, the frames' new destination: unicast, not zero.
	NextHopMAC string `mapstructure:"next_hop_mac"`
}

// ParsePrefix parses a route's prefix: an IPv4 or IPv6 prefix (not IPv4-mapped, no zone)
// with no bits set beyond its length.
func ParsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, errors.New("not a prefix (want ADDR/LEN, such as 10.1.0.0/16 or 2001:db8::/32)")
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("an IPv4-mapped IPv6 prefix: write it as IPv4 (%v)", netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked())
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("bits set beyond the prefix length (the prefix is %v)", m)
	}
	return p, nil
}

// ParseNextHopMAC parses a next hop's MAC: six bytes, unicast, not all zero.
func ParseNextHopMAC(s string) (net.HardwareAddr, error) {
	m, err := net.ParseMAC(s)
	switch {
	case err != nil || len(m) != 6:
		return nil, errors.New("not a MAC address (want six bytes, such as 02:00:00:00:00:01)")
	case [6]byte(m) == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}:
		return nil, errors.New("the broadcast address: a next hop is one neighbour")
	case m[0]&1 != 0:
		return nil, errors.New("a multicast address: a next hop is one neighbour")
	case [6]byte(m) == [6]byte{}:
		return nil, errors.New("the zero address")
	}
	return m, nil
}

// ParseRoute parses a route of forward.routes; the port's name is checked by Validate.
func ParseRoute(r Route) (netip.Prefix, net.HardwareAddr, error) {
	p, err := ParsePrefix(r.Prefix)
	if err != nil {
		return netip.Prefix{}, nil, fmt.Errorf("prefix %q: %w", r.Prefix, err)
	}
	m, err := ParseNextHopMAC(r.NextHopMAC)
	if err != nil {
		return netip.Prefix{}, nil, fmt.Errorf("next_hop_mac %q: %w", r.NextHopMAC, err)
	}
	return p, m, nil
}

// Threads is the number of poll threads: one per poll.cpus entry, one when there are none.
func (c *Config) Threads() int { return max(1, len(c.Poll.CPUs)) }

// checkTxPerThread refuses a port with fewer TX queues than poll threads, for an app
// (l3fwd, a bridge) that gives every thread a TX queue on every port.
func (c *Config) checkTxPerThread(errs *fieldErrors, app string) {
	threads := c.Threads()
	for i, p := range c.Ports {
		if p.sized() && p.TxQueues < threads {
			errs.add(fmt.Sprintf("ports[%d].tx_queues", i), p.TxQueues,
				"fewer than the %d poll threads: %s gives every thread a TX queue on every port", threads, app)
		}
	}
}

// checkL3fwd checks forward.routes in l3fwd mode, and that every port has a TX queue for
// each poll thread (every thread may send to every port).
func (c *Config) checkL3fwd(errs *fieldErrors) {
	f := &c.Forward
	if len(f.Pairs) > 0 {
		errs.add("forward.pairs", nil, "pairs only apply to l2fwd; l3fwd sends each frame where its route says")
	}
	if len(f.Routes) == 0 && f.RoutesFrom != RoutesFromKernel {
		errs.add("forward.routes", nil, "l3fwd needs at least one route ({prefix: 10.1.0.0/16, port: NAME, next_hop_mac: 02:00:00:00:00:01}), or routes_from: kernel")
	}
	seen := map[netip.Prefix]int{}
	for i, r := range f.Routes {
		path := func(key string) string { return fmt.Sprintf("forward.routes[%d].%s", i, key) }
		if p, err := ParsePrefix(r.Prefix); err != nil {
			errs.add(path("prefix"), r.Prefix, "%v", err)
		} else if j, dup := seen[p]; dup {
			errs.add(path("prefix"), r.Prefix, "same prefix as forward.routes[%d].prefix", j)
		} else {
			seen[p] = i
		}
		switch {
		case r.Port == "":
			errs.add(path("port"), nil, "required: the name of the output port")
		case c.Port(r.Port) == nil:
			errs.add(path("port"), r.Port, "no port has this name")
		}
		if _, err := ParseNextHopMAC(r.NextHopMAC); err != nil {
			if r.NextHopMAC == "" {
				errs.add(path("next_hop_mac"), nil, "required: the neighbour's MAC address")
			} else {
				errs.add(path("next_hop_mac"), r.NextHopMAC, "%v", err)
			}
		}
	}
	c.checkL3fwdRouter(errs)
	c.checkRoutesFrom(errs)
	c.checkTxPerThread(errs, "l3fwd")
}

// checkNotL3fwd refuses forward.routes in the other modes.
func (c *Config) checkNotL3fwd(errs *fieldErrors) {
	if len(c.Forward.Routes) > 0 {
		errs.add("forward.routes", nil, "routes only apply to forward.mode l3fwd")
	}
	c.checkNotL3fwdRouter(errs)
	c.checkNotRoutesFrom(errs)
}
