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
	"math/bits"
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
	macs [12]byte // destination, then source
	port dataplane.PortID
	_    uint16 // 16 bytes: an index is a shift
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

// Process forwards or refuses every frame of the burst, as Forward does. While the frames
// are IPv4 without options that verify, have a route and all go to one port, it takes a
// path of fixed offsets written out here, with no call (so nothing of the loop spills),
// and ends with SendAll, the dataplane's fast path. From the first frame that is not
// such a frame, processRest decides frame by frame.
func (a *App) Process(b *dataplane.Burst) {
	var out dataplane.PortID
	le := binary.LittleEndian
	frames := b.Frames
	for i, buf := range frames {
		f := buf.Bytes()
		if len(f) < ethHeader+ipv4Header {
			a.processRest(b, i, out, -1)
			return
		}
		e := (*[ethHeader + ipv4Header]byte)(f)
		w0, w1, dst := le.Uint64(e[ethHeader:]), le.Uint64(e[ethHeader+8:]), le.Uint32(e[ethHeader+ipv4Dst:])
		tot := uint(bits.ReverseBytes16(uint16(w0 >> 16)))
		// EtherType 0x0800 and version/IHL 0x45 in one load (the TOS byte masked); 20 ≤
		// total length ≤ the frame's IP bytes in one comparison; the TTL is w1's low
		// byte; the sum is not zero (the version is 4), so a multiple of 0xffff verifies
		// (see sumOK).
		if le.Uint32(e[12:])&0xffffff != 0x450008 || tot-ipv4Header > uint(len(f)-ethHeader-ipv4Header) ||
			uint8(w1) < minForwardT || (w0&0xffffffff+w0>>32+w1&0xffffffff+w1>>32+uint64(dst))%0xffff != 0 {
			a.processRest(b, i, out, -1)
			return
		}
		nh, found := a.v4.Lookup(bits.ReverseBytes32(dst))
		if !found {
			a.processRest(b, i, out, -1)
			return
		}
		decTTL((*[ipv4Header]byte)(e[ethHeader:]))
		h := &a.hops[nh]
		*(*[12]byte)(e[:]) = h.macs
		if i > 0 && h.port != out {
			a.processRest(b, i, out, int(h.port))
			return
		}
		out = h.port
	}
	b.SendAll(out)
}

// processRest decides frames i and on of b one by one, frames 0 to i-1 having been
// forwarded to out. A port ≥ 0 says that frame i was forwarded already, to that port.
func (a *App) processRest(b *dataplane.Burst, i int, out dataplane.PortID, port int) {
	for j := range i {
		b.Send(j, out)
	}
	if port >= 0 {
		b.Send(i, dataplane.PortID(port))
		i++
	}
	for ; i < len(b.Frames); i++ {
		if p, r, ok := a.Forward(b.Frames[i].Bytes()); ok {
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
	*(*[12]byte)(f) = h.macs
	return h.port, 0, true
}

// route checks f's headers and looks its destination up; on vForward it has decremented
// the TTL or hop limit.
func (a *App) route(f []byte) (lpm.NextHop, verdict) {
	if len(f) < ethHeader {
		return 0, vNotIP
	}
	h := f[ethHeader:]
	switch binary.BigEndian.Uint16(f[12:ethHeader]) {
	case etherIPv4:
		if v := checkIPv4(h); v != vForward {
			return 0, v
		}
		ip := (*[ipv4Header]byte)(h)
		nh, ok := a.v4.Lookup(binary.BigEndian.Uint32(ip[ipv4Dst:]))
		if !ok {
			return 0, vNoRoute
		}
		if ip[ipv4TTL] < minForwardT {
			return 0, vTTLExpired
		}
		decTTL(ip)
		return nh, vForward
	case etherIPv6:
		if v := checkIPv6(h); v != vForward {
			return 0, v
		}
		ip := (*[ipv6Header]byte)(h)
		nh, ok := a.v6.Lookup((*[16]byte)(ip[ipv6Dst:]))
		if !ok {
			return 0, vNoRoute
		}
		if ip[ipv6HopLim] < minForwardT {
			return 0, vTTLExpired
		}
		ip[ipv6HopLim]--
		return nh, vForward
	}
	return 0, vNotIP
}
