// Package l3fwd is uiod's router: an IPv4 and IPv6 longest-prefix-match forwarder run as
// a dataplane.App, what DPDK's l3fwd does in LPM mode. Every frame's IP header is checked
// (RFC 1812: version, header length, total length, header checksum), its TTL or hop limit
// decremented (the IPv4 checksum updated incrementally, RFC 1624), its source MAC set to
// the output port's and its destination MAC to the route's next hop, and it is sent on
// the thread's TX queue on the route's port. A frame that is not forwarded is counted
// under DropNoRoute, DropTTLExpired, DropBadHeader or DropNotIP, and goes to the RX port's
// kernel exception path when it has one, so that the kernel answers ARP and sends the
// ICMP errors, as a router's slow path does.
package l3fwd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd/lpm"
)

// Route is one entry of the routing table.
type Route struct {
	// Prefix is the destination prefix, IPv4 or IPv6, with no bits set beyond its length.
	Prefix netip.Prefix
	// Port is the output port.
	Port dataplane.PortID
	// NextHopMAC is the neighbour the frames go to: their new destination MAC (unicast).
	NextHopMAC net.HardwareAddr
}

// Config configures an App.
type Config struct {
	// Ports are the ports' MAC addresses by PortID: the source MAC of what leaves them.
	Ports []net.HardwareAddr
	// Routes is the routing table. Two routes for the same prefix are an error.
	Routes []Route
}

// App is the l3fwd dataplane.App. Its tables are read-only once New returns, so one App
// serves every poll thread.
type App struct {
	v4   *lpm.Table4
	v6   *lpm.Table6
	hops []hop
}

// hop is a next hop: the output port and the MACs a frame leaves with.
type hop struct {
	port dataplane.PortID
	macs [12]byte // destination, then source
}

// New builds the App's tables from cfg, refusing a route that names a port cfg does not
// have, a next hop that is not a unicast MAC, or a prefix given twice.
func New(cfg Config) (*App, error) {
	a := &App{v4: lpm.NewTable4(), v6: lpm.NewTable6()}
	for i, m := range cfg.Ports {
		if len(m) != 6 {
			return nil, fmt.Errorf("port %d: MAC %q is not 6 bytes", i, m)
		}
	}
	hopOf := map[hop]lpm.NextHop{}
	seen := map[netip.Prefix]int{}
	for i, r := range cfg.Routes {
		if err := checkRoute(r, len(cfg.Ports)); err != nil {
			return nil, fmt.Errorf("route %d (%v): %w", i, r.Prefix, err)
		}
		if j, dup := seen[r.Prefix]; dup {
			return nil, fmt.Errorf("route %d (%v): same prefix as route %d", i, r.Prefix, j)
		}
		seen[r.Prefix] = i
		h := hop{port: r.Port}
		copy(h.macs[:6], r.NextHopMAC)
		copy(h.macs[6:], cfg.Ports[r.Port])
		nh, ok := hopOf[h]
		if !ok {
			nh = lpm.NextHop(len(a.hops))
			if nh > lpm.MaxNextHop {
				return nil, fmt.Errorf("route %d: more than %d next hops", i, lpm.MaxNextHop+1)
			}
			a.hops = append(a.hops, h)
			hopOf[h] = nh
		}
		var err error
		if r.Prefix.Addr().Is4() {
			err = a.v4.Insert(r.Prefix, nh)
		} else {
			err = a.v6.Insert(r.Prefix, nh)
		}
		if err != nil {
			return nil, fmt.Errorf("route %d: %w", i, err)
		}
	}
	return a, nil
}

func checkRoute(r Route, ports int) error {
	switch {
	case !r.Prefix.IsValid():
		return errors.New("no prefix")
	case r.Prefix.Addr().Is4In6(), r.Prefix.Addr().Zone() != "":
		return errors.New("not an IPv4 or IPv6 prefix")
	case r.Prefix.Masked() != r.Prefix:
		return fmt.Errorf("bits set beyond the prefix length (the prefix is %v)", r.Prefix.Masked())
	case int(r.Port) >= ports:
		return fmt.Errorf("port %d: the dataplane has %d ports", r.Port, ports)
	case len(r.NextHopMAC) != 6:
		return fmt.Errorf("next hop MAC %q is not 6 bytes", r.NextHopMAC)
	case r.NextHopMAC[0]&1 != 0:
		return fmt.Errorf("next hop MAC %v is not unicast", r.NextHopMAC)
	case [6]byte(r.NextHopMAC) == [6]byte{}:
		return errors.New("next hop MAC is zero")
	}
	return nil
}

// Process forwards or refuses every frame of the burst.
func (a *App) Process(b *dataplane.Burst) {
	for i, f := range b.Frames {
		if p, r, ok := a.Forward(f.Bytes()); ok {
			b.Send(i, p)
		} else {
			b.ToKernel(i, r)
		}
	}
}

// String is the app's configuration name.
func (a *App) String() string { return "l3fwd" }

// Forward routes the Ethernet frame f: when it is to be forwarded it rewrites f in place
// (TTL or hop limit, IPv4 checksum, MACs) and returns the output port and true; otherwise
// it leaves f as it was and returns why. It allocates nothing.
func (a *App) Forward(f []byte) (dataplane.PortID, dataplane.DropReason, bool) {
	nh, v := a.route(f)
	if v != vForward {
		return 0, reasons[v], false
	}
	h := &a.hops[nh]
	copy(f[:12], h.macs[:])
	return h.port, 0, true
}

// route checks f's headers and looks its destination up; on vForward it has decremented
// the TTL or hop limit.
func (a *App) route(f []byte) (lpm.NextHop, verdict) {
	if len(f) < ethHeader {
		return 0, vNotIP
	}
	h := f[ethHeader:]
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherIPv4:
		if v := checkIPv4(h); v != vForward {
			return 0, v
		}
		nh, ok := a.v4.Lookup(binary.BigEndian.Uint32(h[ipv4Dst:]))
		if !ok {
			return 0, vNoRoute
		}
		if h[ipv4TTL] < minForwardT {
			return 0, vTTLExpired
		}
		decTTL(h)
		return nh, vForward
	case etherIPv6:
		if v := checkIPv6(h); v != vForward {
			return 0, v
		}
		nh, ok := a.v6.Lookup((*[16]byte)(h[ipv6Dst : ipv6Dst+16]))
		if !ok {
			return 0, vNoRoute
		}
		if h[ipv6HopLim] < minForwardT {
			return 0, vTTLExpired
		}
		h[ipv6HopLim]--
		return nh, vForward
	}
	return 0, vNotIP
}
