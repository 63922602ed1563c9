package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd"
)

// The test's TAPs: ifindex 10 is port 0's, 11 port 1's; 12 is another device.
const (
	tap0, tap1, eth = 10, 11, 12
)

func ipnet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// rt builds a route message: family from dst, table main, unicast, on ifi by gw ("" for
// on-link).
func rt(typ uint16, dst string, ifi int, gw string, mods ...func(*netlink.Route)) netlink.RouteUpdate {
	r := netlink.Route{Dst: ipnet(dst), LinkIndex: ifi, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST, Family: unix.AF_INET}
	if strings.Contains(dst, ":") {
		r.Family = unix.AF_INET6
	}
	if gw != "" {
		r.Gw = net.ParseIP(gw)
	}
	for _, m := range mods {
		m(&r)
	}
	return netlink.RouteUpdate{Type: typ, Route: r}
}

func nb(typ uint16, ifi int, ip, mac string, state int) netlink.NeighUpdate {
	n := netlink.Neigh{LinkIndex: ifi, IP: net.ParseIP(ip), State: state, Family: unix.AF_INET}
	if strings.Contains(ip, ":") {
		n.Family = unix.AF_INET6
	}
	if mac != "" {
		n.HardwareAddr, _ = net.ParseMAC(mac)
	}
	return netlink.NeighUpdate{Type: typ, Neigh: n}
}

const (
	add, del = unix.RTM_NEWROUTE, unix.RTM_DELROUTE
	nadd     = unix.RTM_NEWNEIGH
	ndel     = unix.RTM_DELNEIGH
	macA     = "02:00:00:00:0a:01"
	macB     = "02:00:00:00:0b:01"
)

// show renders routes and local prefixes as "PREFIX>PORT@MAC", "PREFIX>kernel" and
// "PREFIX local".
func show(routes []l3fwd.Route, local []netip.Prefix) []string {
	var out []string
	for _, r := range routes {
		if r.Unresolved {
			out = append(out, r.Prefix.String()+">kernel")
		} else {
			out = append(out, fmt.Sprintf("%v>%d@%v", r.Prefix, r.Port, r.NextHopMAC))
		}
	}
	for _, p := range local {
		out = append(out, p.String()+" local")
	}
	return out
}

func TestKernelFIB(t *testing.T) {
	table := func(n int) func(*netlink.Route) { return func(r *netlink.Route) { r.Table = n } }
	typ := func(n int) func(*netlink.Route) { return func(r *netlink.Route) { r.Type = n } }
	metric := func(n int) func(*netlink.Route) { return func(r *netlink.Route) { r.Priority = n } }
	local := func(r *netlink.Route) { r.Table, r.Type = unix.RT_TABLE_LOCAL, unix.RTN_LOCAL }
	for _, tc := range []struct {
		name string
		msgs []any // netlink.RouteUpdate or netlink.NeighUpdate
		want []string
	}{
		{"nothing", nil, nil},
		{
			"gateway unresolved",
			[]any{rt(add, "10.2.0.0/16", tap1, "10.1.0.2")},
			[]string{"10.2.0.0/16>kernel"},
		},
		{
			"gateway resolved",
			[]any{rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE)},
			[]string{"10.2.0.0/16>1@" + macA},
		},
		{
			"stale, delay, probe and permanent are resolved; incomplete and failed not",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), rt(add, "10.3.0.0/16", tap1, "10.1.0.3"),
				rt(add, "10.4.0.0/16", tap1, "10.1.0.4"), rt(add, "10.5.0.0/16", tap1, "10.1.0.5"),
				rt(add, "10.6.0.0/16", tap1, "10.1.0.6"), rt(add, "10.7.0.0/16", tap1, "10.1.0.7"),
				nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_STALE), nb(nadd, tap1, "10.1.0.3", macA, netlink.NUD_DELAY),
				nb(nadd, tap1, "10.1.0.4", macA, netlink.NUD_PROBE), nb(nadd, tap1, "10.1.0.5", macA, netlink.NUD_PERMANENT),
				nb(nadd, tap1, "10.1.0.6", "", netlink.NUD_INCOMPLETE), nb(nadd, tap1, "10.1.0.7", macA, netlink.NUD_FAILED),
			},
			[]string{"10.2.0.0/16>1@" + macA, "10.3.0.0/16>1@" + macA, "10.4.0.0/16>1@" + macA, "10.5.0.0/16>1@" + macA, "10.6.0.0/16>kernel", "10.7.0.0/16>kernel"},
		},
		{
			"neighbour lost",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
				nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_FAILED),
			},
			[]string{"10.2.0.0/16>kernel"},
		},
		{
			"neighbour deleted",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
				nb(ndel, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
			},
			[]string{"10.2.0.0/16>kernel"},
		},
		{
			"neighbour's MAC changes",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
				nb(nadd, tap1, "10.1.0.2", macB, netlink.NUD_REACHABLE),
			},
			[]string{"10.2.0.0/16>1@" + macB},
		},
		{
			"the gateway's neighbour must be on the route's TAP",
			[]any{rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), nb(nadd, tap0, "10.1.0.2", macA, netlink.NUD_REACHABLE)},
			[]string{"10.2.0.0/16>kernel"},
		},
		{
			"route deleted",
			[]any{rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), rt(del, "10.2.0.0/16", tap1, "10.1.0.2")},
			nil,
		},
		{
			"route replaced onto another device",
			[]any{rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), rt(add, "10.2.0.0/16", eth, "10.1.0.2")},
			nil,
		},
		{
			"not on a TAP, other tables, other types",
			[]any{
				rt(add, "10.2.0.0/16", eth, "10.1.0.2"), rt(add, "10.3.0.0/16", tap1, "10.1.0.2", table(100)),
				rt(add, "10.4.0.0/16", tap1, "", typ(unix.RTN_BLACKHOLE)), rt(add, "10.5.0.0/16", tap1, "", typ(unix.RTN_UNREACHABLE)),
				rt(add, "10.6.0.0/16", tap1, "10.1.0.2", func(r *netlink.Route) { r.Flags = unix.RTM_F_CLONED }),
				nb(nadd, eth, "10.1.0.9", macA, netlink.NUD_REACHABLE),
			},
			nil,
		},
		{
			"on-link route and its neighbours",
			[]any{
				rt(add, "10.1.0.0/24", tap1, ""), nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
				nb(nadd, tap1, "10.1.0.3", macB, netlink.NUD_STALE), nb(nadd, tap1, "10.9.0.1", macB, netlink.NUD_REACHABLE),
				nb(nadd, tap0, "10.1.0.4", macB, netlink.NUD_REACHABLE),
			},
			[]string{"10.1.0.0/24>kernel", "10.1.0.2/32>1@" + macA, "10.1.0.3/32>1@" + macB},
		},
		{
			"a neighbour under a longer route by gateway gets no host route",
			[]any{
				rt(add, "10.1.0.0/24", tap1, ""), rt(add, "10.1.0.128/25", tap0, "10.0.0.1"),
				nb(nadd, tap1, "10.1.0.200", macA, netlink.NUD_REACHABLE),
			},
			[]string{"10.1.0.0/24>kernel", "10.1.0.128/25>kernel"},
		},
		{
			"on-link /32",
			[]any{rt(add, "10.9.9.9/32", tap0, ""), nb(nadd, tap0, "10.9.9.9", macA, netlink.NUD_REACHABLE)},
			[]string{"10.9.9.9/32>0@" + macA},
		},
		{
			"default route, IPv4 and IPv6",
			[]any{
				rt(add, "0.0.0.0/0", tap0, "10.0.0.1"), rt(add, "::/0", tap0, "fe80::1"),
				nb(nadd, tap0, "10.0.0.1", macA, netlink.NUD_REACHABLE), nb(nadd, tap0, "fe80::1", macB, netlink.NUD_REACHABLE),
			},
			[]string{"0.0.0.0/0>0@" + macA, "::/0>0@" + macB},
		},
		{
			"the lowest metric wins",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2", metric(200)), rt(add, "10.2.0.0/16", tap0, "10.0.0.1", metric(100)),
				nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE), nb(nadd, tap0, "10.0.0.1", macB, netlink.NUD_REACHABLE),
			},
			[]string{"10.2.0.0/16>0@" + macB},
		},
		{
			"the lowest metric deleted",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "10.1.0.2", metric(200)), rt(add, "10.2.0.0/16", tap0, "10.0.0.1", metric(100)),
				nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE), rt(del, "10.2.0.0/16", tap0, "10.0.0.1", metric(100)),
			},
			[]string{"10.2.0.0/16>1@" + macA},
		},
		{
			"local and broadcast routes",
			[]any{
				rt(add, "10.1.0.1/32", tap1, "", local), rt(add, "10.1.0.255/32", tap1, "", local, typ(unix.RTN_BROADCAST)),
				rt(add, "2001:db8:1::1/128", tap1, "", local), rt(add, "2001:db8:1::/128", tap1, "", local, typ(unix.RTN_ANYCAST)),
				rt(add, "ff00::/8", tap1, "", table(unix.RT_TABLE_LOCAL), typ(unix.RTN_MULTICAST)),
				rt(add, "127.0.0.1/32", 1, "", local), // on lo: l3fwd refuses it (reserved), the kernel's anyway
				rt(add, "192.168.9.1/32", eth, "", local),
				rt(add, "192.168.9.255/32", eth, "", local, typ(unix.RTN_BROADCAST)),
			},
			// Linux delivers to any of its addresses whatever the device (192.168.9.1 on
			// eth); another device's broadcast address is not the TAPs' business.
			[]string{"10.1.0.1/32 local", "10.1.0.255/32 local", "127.0.0.1/32 local", "192.168.9.1/32 local",
				"2001:db8:1::/128 local", "2001:db8:1::1/128 local"},
		},
		{
			"a local route wins over a unicast one",
			[]any{rt(add, "10.1.0.1/32", tap1, "10.1.0.9"), rt(add, "10.1.0.1/32", tap1, "", local)},
			[]string{"10.1.0.1/32 local"},
		},
		{
			"multipath: the first next hop on a TAP",
			[]any{
				rt(add, "10.2.0.0/16", 0, "", func(r *netlink.Route) {
					r.MultiPath = []*netlink.NexthopInfo{{LinkIndex: eth, Gw: net.ParseIP("192.0.2.1")}, {LinkIndex: tap1, Gw: net.ParseIP("10.1.0.2")}}
				}),
				nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE),
			},
			[]string{"10.2.0.0/16>1@" + macA},
		},
		{
			"a gateway of the other family (via)",
			[]any{
				rt(add, "10.2.0.0/16", tap1, "", func(r *netlink.Route) { r.Via = &netlink.Via{AddrFamily: unix.AF_INET6, Addr: net.ParseIP("fe80::1")} }),
				nb(nadd, tap1, "10.2.0.5", macA, netlink.NUD_REACHABLE),
			},
			[]string{"10.2.0.0/16>kernel"},
		},
		{
			"IPv6 on-link",
			[]any{rt(add, "2001:db8:1::/64", tap1, ""), nb(nadd, tap1, "2001:db8:1::2", macA, netlink.NUD_REACHABLE)},
			[]string{"2001:db8:1::/64>kernel", "2001:db8:1::2/128>1@" + macA},
		},
		{
			"proxy entries and other families are not neighbours",
			[]any{
				rt(add, "10.1.0.0/24", tap1, ""),
				func() netlink.NeighUpdate {
					u := nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE)
					u.Flags = netlink.NTF_PROXY
					return u
				}(),
				func() netlink.NeighUpdate {
					u := nb(nadd, tap1, "10.1.0.3", macA, netlink.NUD_REACHABLE)
					u.Family = unix.AF_BRIDGE
					return u
				}(),
			},
			[]string{"10.1.0.0/24>kernel"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKernelFIB(unix.RT_TABLE_MAIN, map[int]dataplane.PortID{tap0: 0, tap1: 1}, []string{"p0", "p1"})
			for _, m := range tc.msgs {
				switch m := m.(type) {
				case netlink.RouteUpdate:
					k.route(m)
				case netlink.NeighUpdate:
					k.neigh(m)
				}
			}
			if got := show(k.build()); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			// /status lists what build used.
			routes, _, _ := k.lists()
			if len(routes) != len(k.chosen()) {
				t.Errorf("/status lists %d routes, want %d", len(routes), len(k.chosen()))
			}
		})
	}
}

// TestKernelFIBChanged: a message that changes nothing reports no change (no rebuild).
func TestKernelFIBChanged(t *testing.T) {
	k := newKernelFIB(unix.RT_TABLE_MAIN, map[int]dataplane.PortID{tap0: 0}, nil)
	for i, step := range []struct {
		changed bool
		apply   func() bool
	}{
		{true, func() bool { return k.route(rt(add, "10.2.0.0/16", tap0, "10.0.0.1")) }},
		{false, func() bool { return k.route(rt(add, "10.2.0.0/16", tap0, "10.0.0.1")) }},
		{false, func() bool { return k.route(rt(add, "10.3.0.0/16", eth, "10.0.0.1")) }},
		{true, func() bool { return k.neigh(nb(nadd, tap0, "10.0.0.1", macA, netlink.NUD_REACHABLE)) }},
		{false, func() bool { return k.neigh(nb(nadd, tap0, "10.0.0.1", macA, netlink.NUD_REACHABLE)) }},
		{true, func() bool { return k.neigh(nb(nadd, tap0, "10.0.0.1", macA, netlink.NUD_STALE)) }},
		{false, func() bool { return k.neigh(nb(nadd, tap0, "10.0.0.7", "", netlink.NUD_INCOMPLETE)) }},
		{true, func() bool { return k.neigh(nb(ndel, tap0, "10.0.0.1", macA, 0)) }},
		{false, func() bool { return k.neigh(nb(ndel, tap0, "10.0.0.1", macA, 0)) }},
		{true, func() bool { return k.route(rt(del, "10.2.0.0/16", tap0, "10.0.0.1")) }},
		{false, func() bool { return k.route(rt(del, "10.2.0.0/16", tap0, "10.0.0.1")) }},
	} {
		if got := step.apply(); got != step.changed {
			t.Errorf("step %d: changed %v, want %v", i, got, step.changed)
		}
	}
}

// TestKernelFIBUpdate: what build makes, l3fwd takes (fe80::/64 and multicast routes of
// a TAP are refused there, counted, not errors).
func TestKernelFIBUpdate(t *testing.T) {
	k := newKernelFIB(unix.RT_TABLE_MAIN, map[int]dataplane.PortID{tap0: 0, tap1: 1}, nil)
	for _, u := range []netlink.RouteUpdate{
		rt(add, "10.2.0.0/16", tap1, "10.1.0.2"), rt(add, "10.1.0.0/24", tap1, ""), rt(add, "fe80::/64", tap1, ""),
		rt(add, "10.1.0.1/32", tap1, "", func(r *netlink.Route) { r.Table, r.Type = unix.RT_TABLE_LOCAL, unix.RTN_LOCAL }),
	} {
		k.route(u)
	}
	k.neigh(nb(nadd, tap1, "10.1.0.2", macA, netlink.NUD_REACHABLE))
	app, err := l3fwd.New(l3fwd.Config{Ports: []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := app.Update(k.build())
	if err != nil {
		t.Fatal(err)
	}
	// 10.2/16 by 10.1.0.2, 10.1.0/24 on-link, 10.1.0.2/32 its neighbour; fe80::/64 refused.
	if st.Dynamic != 3 || st.Unresolved != 1 || st.Local != 1 || st.Refused != 1 {
		t.Errorf("%+v: want 3 dynamic routes, 1 unresolved, 1 local, 1 refused", st)
	}
}
