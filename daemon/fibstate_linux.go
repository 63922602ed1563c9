package daemon

import (
	"cmp"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd"
)

// kernelFIB is what rtnetlink says about the routes and neighbours on uiod's TAPs, and
// its translation into l3fwd's dynamic routes (docs/design.md §16, "Routes from the
// kernel"). It is not safe for concurrent use.
type kernelFIB struct {
	table  int                          // forward.kernel_table
	ports  map[int]dataplane.PortID     // TAP ifindex → the port it is the kernel path of
	names  []string                     // port names by PortID, for /status
	routes map[routeKey]kernelRoute     // the table's unicast routes and the local table's receive routes
	neighs map[neighKey]kernelNeighbour // neighbours on the TAPs
}

// routeKey is what tells two kernel routes apart: the table, the prefix, the metric and
// the TOS (RTM_NEWROUTE with NLM_F_REPLACE replaces the route of the same key).
type routeKey struct {
	table    int
	prefix   netip.Prefix
	priority int
	tos      int
}

// kernelRoute is a route on a TAP: a receive route (local), or a unicast route by port
// to a gateway (gw invalid: on-link, the destination is the neighbour).
type kernelRoute struct {
	local  bool
	via    bool // a gateway of the other family (RTA_VIA): the kernel forwards
	port   dataplane.PortID
	ifi    int
	gw     netip.Addr
	metric int
}

type neighKey struct {
	ifi int
	ip  netip.Addr
}

// kernelNeighbour is a resolved neighbour entry (its state one of resolvedStates).
type kernelNeighbour struct {
	mac   [6]byte
	state int
}

// resolvedStates are the neighbour states whose MAC l3fwd sends to: the kernel would
// too (STALE, DELAY and PROBE are being rechecked, but the MAC is the one in use).
const resolvedStates = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT

// localTable is the kernel's table of local and broadcast addresses.
const localTable = unix.RT_TABLE_LOCAL

func newKernelFIB(table int, ports map[int]dataplane.PortID, names []string) *kernelFIB {
	return &kernelFIB{table: table, ports: ports, names: names, routes: map[routeKey]kernelRoute{}, neighs: map[neighKey]kernelNeighbour{}}
}

// prefixOf is the route's destination as a prefix of its family.
func prefixOf(family int, dst *net.IPNet) (netip.Prefix, bool) {
	if dst == nil {
		switch family {
		case unix.AF_INET:
			return netip.PrefixFrom(netip.IPv4Unspecified(), 0), true
		case unix.AF_INET6:
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), true
		}
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(dst.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := dst.Mask.Size()
	if family == unix.AF_INET || bits == 32 {
		a = a.Unmap()
	}
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	p := netip.PrefixFrom(a, ones)
	return p, p.IsValid() && p.Masked() == p
}

// addrOf is ip as an address of family (IPv4 unmapped), invalid for none.
func addrOf(family int, ip net.IP) netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	if family == unix.AF_INET {
		if a = a.Unmap(); !a.Is4() {
			return netip.Addr{}
		}
	}
	return a
}

// route applies a route message and reports whether the state changed. A route that is
// not on a TAP, not of the table (or a receive route of the local table), or of a type
// l3fwd does not route, is not kept: a replacement that moves a route off the TAPs
// deletes it.
func (k *kernelFIB) route(u netlink.RouteUpdate) bool {
	r := u.Route
	if r.Family != unix.AF_INET && r.Family != unix.AF_INET6 || r.Flags&unix.RTM_F_CLONED != 0 {
		return false
	}
	p, ok := prefixOf(r.Family, r.Dst)
	if !ok {
		return false
	}
	key := routeKey{table: r.Table, prefix: p, priority: r.Priority, tos: r.Tos}
	kr, keep := k.translate(r)
	if u.Type == unix.RTM_DELROUTE || !keep {
		if _, had := k.routes[key]; had {
			delete(k.routes, key)
			return true
		}
		return false
	}
	if old, had := k.routes[key]; had && old == kr {
		return false
	}
	k.routes[key] = kr
	return true
}

// translate is r as l3fwd takes it, or false when l3fwd leaves it to the kernel.
func (k *kernelFIB) translate(r netlink.Route) (kernelRoute, bool) {
	ifi, gw := r.LinkIndex, r.Gw
	if len(r.MultiPath) > 0 { // the first next hop on a TAP (l3fwd has no ECMP)
		ifi, gw = 0, nil
		for _, nh := range r.MultiPath {
			if _, ok := k.ports[nh.LinkIndex]; ok {
				ifi, gw = nh.LinkIndex, nh.Gw
				break
			}
		}
	}
	port, onTAP := k.ports[ifi]
	kr := kernelRoute{port: port, ifi: ifi, metric: r.Priority}
	switch {
	case r.Table == localTable && r.Type == unix.RTN_LOCAL:
		// Any of the host's addresses, on whichever device: Linux delivers what is sent
		// to one of them whatever interface it came in by (the weak host model).
		kr.local = true
	case !onTAP:
		return kernelRoute{}, false
	case r.Table == localTable && (r.Type == unix.RTN_BROADCAST || r.Type == unix.RTN_ANYCAST):
		kr.local = true
	case r.Table == k.table && r.Type == unix.RTN_UNICAST:
		kr.gw = addrOf(r.Family, gw)
		kr.via = !kr.gw.IsValid() && r.Via != nil
	default:
		return kernelRoute{}, false
	}
	return kr, true
}

// neigh applies a neighbour message and reports whether the state changed.
func (k *kernelFIB) neigh(u netlink.NeighUpdate) bool {
	n := u.Neigh
	if _, ok := k.ports[n.LinkIndex]; !ok || (n.Family != unix.AF_INET && n.Family != unix.AF_INET6) || n.Flags&netlink.NTF_PROXY != 0 {
		return false
	}
	ip := addrOf(n.Family, n.IP)
	if !ip.IsValid() {
		return false
	}
	key := neighKey{ifi: n.LinkIndex, ip: ip}
	old, had := k.neighs[key]
	if u.Type == unix.RTM_DELNEIGH || len(n.HardwareAddr) != 6 || n.State&resolvedStates == 0 {
		// Gone, or not usable (incomplete, failed, noarp): the kernel path resolves it.
		if had {
			delete(k.neighs, key)
			return true
		}
		return false
	}
	e := kernelNeighbour{mac: [6]byte(n.HardwareAddr), state: n.State}
	if had && old == e {
		return false
	}
	k.neighs[key] = e
	return true
}

// resetRoutes and resetNeighs forget a subscription's state (it was lost: the dump that
// follows fills it again).
func (k *kernelFIB) resetRoutes() { clear(k.routes) }
func (k *kernelFIB) resetNeighs() { clear(k.neighs) }

// neighState names a resolved neighbour's state as ip neigh does.
func neighState(s int) string {
	switch {
	case s&netlink.NUD_PERMANENT != 0:
		return "permanent"
	case s&netlink.NUD_REACHABLE != 0:
		return "reachable"
	case s&netlink.NUD_STALE != 0:
		return "stale"
	case s&netlink.NUD_DELAY != 0:
		return "delay"
	}
	return "probe"
}

// chosen is the route l3fwd takes for each prefix: a receive route over a unicast one
// (the kernel consults the local table first), else the lowest metric, then the lowest
// key for a tie.
func (k *kernelFIB) chosen() map[netip.Prefix]kernelRoute {
	keys := make([]routeKey, 0, len(k.routes))
	for key := range k.routes {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b routeKey) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.tos, b.tos), cmp.Compare(a.table, b.table))
	})
	best := map[netip.Prefix]kernelRoute{}
	for _, key := range keys {
		r := k.routes[key]
		if old, ok := best[key.prefix]; ok && (old.local || !r.local) {
			continue
		}
		best[key.prefix] = r
	}
	return best
}

// build translates the state into l3fwd's dynamic routes and local prefixes, sorted by
// prefix: a route by gateway takes the gateway's MAC on the route's TAP, an on-link route
// is unresolved (the kernel resolves what it sends to) and each resolved neighbour it
// covers, as the longest route covering the neighbour, gets a host route of its own.
func (k *kernelFIB) build() ([]l3fwd.Route, []netip.Prefix) {
	best := k.chosen()
	out := map[netip.Prefix]l3fwd.Route{}
	var local []netip.Prefix
	for p, r := range best {
		switch {
		case r.local:
			local = append(local, p)
		case r.gw.IsValid():
			if n, ok := k.neighs[neighKey{ifi: r.ifi, ip: r.gw}]; ok {
				out[p] = l3fwd.Route{Prefix: p, Port: r.port, NextHopMAC: net.HardwareAddr(n.mac[:])}
			} else {
				out[p] = l3fwd.Route{Prefix: p, Unresolved: true}
			}
		default: // on-link, or by a gateway of the other family
			out[p] = l3fwd.Route{Prefix: p, Unresolved: true}
		}
	}
	for key, n := range k.neighs {
		r, ok := longest(best, key.ip)
		if !ok || r.local || r.gw.IsValid() || r.via || r.ifi != key.ifi {
			continue
		}
		h := netip.PrefixFrom(key.ip, key.ip.BitLen())
		out[h] = l3fwd.Route{Prefix: h, Port: r.port, NextHopMAC: net.HardwareAddr(n.mac[:])}
	}
	routes := make([]l3fwd.Route, 0, len(out))
	for _, r := range out {
		routes = append(routes, r)
	}
	slices.SortFunc(routes, func(a, b l3fwd.Route) int { return comparePrefix(a.Prefix, b.Prefix) })
	slices.SortFunc(local, comparePrefix)
	return routes, local
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// longest is the route of the longest prefix in best that covers a.
func longest(best map[netip.Prefix]kernelRoute, a netip.Addr) (kernelRoute, bool) {
	for bits := a.BitLen(); bits >= 0; bits-- {
		p, _ := a.Prefix(bits)
		if r, ok := best[p]; ok {
			return r, true
		}
	}
	return kernelRoute{}, false
}

// lists are the routes and neighbours for /status, at most fibListMax of each.
func (k *kernelFIB) lists() ([]FIBRoute, []FIBNeighbour, bool) {
	name := func(ifi int) string {
		if p, ok := k.ports[ifi]; ok && int(p) < len(k.names) {
			return k.names[p]
		}
		return ""
	}
	best := k.chosen()
	prefixes := make([]netip.Prefix, 0, len(best))
	for p := range best {
		prefixes = append(prefixes, p)
	}
	slices.SortFunc(prefixes, comparePrefix)
	truncated := false
	if len(prefixes) > fibListMax {
		prefixes, truncated = prefixes[:fibListMax], true
	}
	var routes []FIBRoute
	for _, p := range prefixes {
		r := best[p]
		fr := FIBRoute{Prefix: p.String(), Port: name(r.ifi), Kind: "unresolved"}
		switch {
		case r.local:
			fr.Kind = "local"
		case r.gw.IsValid():
			fr.Gateway = r.gw.String()
			if n, ok := k.neighs[neighKey{ifi: r.ifi, ip: r.gw}]; ok {
				fr.Kind, fr.MAC = "forward", net.HardwareAddr(n.mac[:]).String()
			}
		default:
			fr.Kind = "on-link"
		}
		routes = append(routes, fr)
	}
	keys := make([]neighKey, 0, len(k.neighs))
	for key := range k.neighs {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b neighKey) int { return cmp.Or(cmp.Compare(a.ifi, b.ifi), a.ip.Compare(b.ip)) })
	if len(keys) > fibListMax {
		keys, truncated = keys[:fibListMax], true
	}
	var neighs []FIBNeighbour
	for _, key := range keys {
		n := k.neighs[key]
		neighs = append(neighs, FIBNeighbour{Port: name(key.ifi), IP: key.ip.String(), MAC: net.HardwareAddr(n.mac[:]).String(), State: neighState(n.state)})
	}
	return routes, neighs, truncated
}
