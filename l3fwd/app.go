// Package l3fwd is uiod's router: an IPv4 and IPv6 longest-prefix-match forwarder run as
// a dataplane.App, what DPDK's l3fwd does in LPM mode. Every frame's IP header is checked
// (RFC 1812: version, header length, total length, header checksum), its TTL or hop limit
// decremented (the IPv4 checksum updated incrementally, RFC 1624), its source MAC set to
// the output port's and its destination MAC to the route's next hop, and it is sent on
// the thread's TX queue on the route's port. A frame that is not forwarded is counted
// under DropNoRoute, DropTTLExpired, DropBadHeader or DropNotIP, and goes to the RX port's
// kernel exception path when it has one, so that the kernel answers ARP and sends the
// ICMP errors, as a router's slow path does. The routes are Config's, pinned, and those
// App.Update gives while the poll threads run (the kernel's, docs/design.md §16), each
// table a generation the threads take at their next burst (fib.go).
package l3fwd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

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
	// Unresolved says the next hop's MAC is not known yet (a route from the kernel whose
	// neighbour is not resolved: App.Update only): the frames go to the RX port's kernel
	// path (DropUnresolved), which resolves the neighbour. Port and NextHopMAC are unused.
	Unresolved bool
}

// Config configures an App.
type Config struct {
	// Ports are the ports' MAC addresses by PortID: the source MAC of what leaves them,
	// and the only unicast destination MAC l3fwd takes on them.
	Ports []net.HardwareAddr
	// Routes is the routing table. Two routes for the same prefix are an error, and so is
	// a route inside a destination l3fwd never routes (multicast, loopback, link-local,
	// 0/8, the limited broadcast: docs/design.md).
	Routes []Route
	// Local are the router's own addresses (receive routes): the addresses the kernel
	// holds on the ports' TAPs, and their subnets' broadcast addresses. What is sent to
	// them goes to the RX port's kernel path, never forwarded. A prefix may be longer
	// than a host's (a /32 or /128 is one address); it wins over a route for the same
	// destinations.
	Local []netip.Prefix
	// MTU is each port's MTU by PortID, the most IP bytes a frame leaving it may carry
	// (0 or missing: 1500). Larger packets go to the kernel path (mtu_exceeded), which
	// answers with fragmentation needed or packet too big, or fragments.
	MTU []int
	// Police limits what goes to the kernel exception path, per class (zero:
	// DefaultPolice).
	Police Police
	// Threads is the number of poll threads, each with its policer (0: MaxThreads). A
	// frame for the kernel on a thread beyond it is dropped as policed.
	Threads int
	// MaxRoutes4 and MaxRoutes6 bound the IPv4 and IPv6 entries of the table, routes and
	// local prefixes together, static and from Update (0: DefaultMaxRoutes4,
	// DefaultMaxRoutes6). Static entries over a limit are New's error; Update leaves out
	// those over it (FIBStats.OverLimit), keeping the entries already in force first.
	MaxRoutes4, MaxRoutes6 int
}

// The default route limits: room for a full Internet table of each family (about
// 1 M IPv4 and 230 k IPv6 routes in 2026) with some growth.
const (
	DefaultMaxRoutes4 = 1 << 20
	DefaultMaxRoutes6 = 1 << 19
)

// MaxThreads is the most poll threads an App polices.
const MaxThreads = 64

// DefaultMTU is a port's MTU when Config.MTU does not give it.
const DefaultMTU = 1500

// App is the l3fwd dataplane.App. One App serves every poll thread; each thread has its
// own policer and counters. Its tables are a generation that is never changed once
// published (fib): Update publishes a new one beside it, and the threads take it at
// their next burst, without a lock.
type App struct {
	fib     atomic.Pointer[fib]
	rxMAC   []uint64 // by PortID: the ports' MACs at New, as the fast path loads them (see macKey; the generation's are in force)
	threads []threadState

	// What every generation is built from: the ports' MACs and MTUs, and the static
	// routes and local prefixes (Config), which Update keeps.
	ports       []net.HardwareAddr
	mtu         []int
	static      []Route
	staticLocal []netip.Prefix

	max4, max6 int // Config.MaxRoutes4 and MaxRoutes6, defaults applied

	updateMu     sync.Mutex            // one Update at a time; guards the fields below
	pinned       map[netip.Prefix]bool // the static routes' and local prefixes
	base         FIBStats              // New's counts
	dyn          map[netip.Prefix]hop  // Update's entries in force
	updateErrors atomic.Uint64
}

// hop is a next hop: the output port and the MACs a frame leaves with, and the port's
// MTU. A special next hop (a reserved or local destination) has MTU 0, so that the fast
// path's MTU check sends its frames to the slow path, and its verdict in port.
type hop struct {
	macs [12]byte // destination, then source
	port dataplane.PortID
	mtu  uint16 // 16 bytes: an index is a shift
}

// macKey is a destination MAC as the fast path compares it: the frame's first 8 bytes
// loaded little-endian and shifted left by 16, which leaves the 6 bytes of the MAC.
func macKey(m []byte) uint64 {
	var b [8]byte
	copy(b[:6], m)
	return binary.LittleEndian.Uint64(b[:]) << 16
}

// New builds the App's tables from cfg, refusing a route that names a port cfg does not
// have, a next hop that is not a unicast MAC, a prefix given twice, or a route inside a
// reserved destination.
func New(cfg Config) (*App, error) {
	a := &App{}
	for i, m := range cfg.Ports {
		if len(m) != 6 {
			return nil, fmt.Errorf("port %d: MAC %q is not 6 bytes", i, m)
		}
		a.rxMAC = append(a.rxMAC, macKey(m))
	}
	for i, m := range cfg.MTU {
		if m != 0 && (m < 68 || m > 65535) {
			return nil, fmt.Errorf("port %d: MTU %d: want 68 to 65535", i, m)
		}
	}
	police := cfg.Police
	if police == (Police{}) {
		police = DefaultPolice
	}
	if err := police.check(); err != nil {
		return nil, err
	}
	threads := cfg.Threads
	if threads == 0 {
		threads = MaxThreads
	}
	if threads < 0 || threads > MaxThreads {
		return nil, fmt.Errorf("threads %d: want 1 to %d", threads, MaxThreads)
	}
	a.threads = newThreads(threads, police)
	a.max4, a.max6 = cfg.MaxRoutes4, cfg.MaxRoutes6
	if a.max4 == 0 {
		a.max4 = DefaultMaxRoutes4
	}
	if a.max6 == 0 {
		a.max6 = DefaultMaxRoutes6
	}
	if a.max4 < 0 || a.max6 < 0 {
		return nil, fmt.Errorf("route limits %d (IPv4) and %d (IPv6): want 0 (the default) or more", cfg.MaxRoutes4, cfg.MaxRoutes6)
	}
	a.ports, a.mtu = slices.Clone(cfg.Ports), slices.Clone(cfg.MTU)
	a.static, a.staticLocal = slices.Clone(cfg.Routes), slices.Clone(cfg.Local)
	b := a.newBuilder()
	if err := b.static(); err != nil {
		return nil, err
	}
	a.pinned = map[netip.Prefix]bool{}
	for p := range b.seen {
		a.pinned[p] = true
	}
	f, err := b.finish(1)
	if err != nil {
		return nil, err
	}
	a.base = f.info
	a.fib.Store(f)
	return a, nil
}

// checkReserved refuses a prefix inside one of the reserved destinations (a shorter route
// covering one is fine: the reserved prefix, longer, wins). A local address may lie in
// the link-local ranges, which a router may hold.
func checkReserved(p netip.Prefix, local bool) error {
	for _, r := range reserved {
		if r.prefix.Addr().Is4() != p.Addr().Is4() || p.Bits() < r.prefix.Bits() || !r.prefix.Contains(p.Addr()) {
			continue
		}
		if local && (r.v == vLinkLocal || r.v == vLinkLocal4) {
			continue
		}
		return fmt.Errorf("inside %v (%s), which l3fwd never forwards", r.prefix, r.what)
	}
	return nil
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

// Process forwards or refuses every frame of the burst, as Forward does, and hands what
// it does not forward to the kernel path or drops it (see processRest). While the frames
// are IPv4 without options or trailing bytes, to the RX port's MAC, from a source that
// needs no second look, not a fragment at offset 1, that verify, have a route within the
// output port's MTU and all go to one port, it takes a path of fixed offsets written out
// here, with no call (so nothing of the loop spills), and ends with SendAll, the
// dataplane's fast path. From the first frame that is not such a frame, processRest
// decides frame by frame.
func (a *App) Process(b *dataplane.Burst) {
	t := a.fib.Load() // this burst's generation
	if int(b.Port) >= len(t.rxMAC) {
		a.processRest(t, b, 0, 0, -1)
		return
	}
	mac := t.rxMAC[b.Port]
	_ = t.app // t's nil check, here rather than on every frame
	var out dataplane.PortID
	le := binary.LittleEndian
	frames := b.Frames
	for i, buf := range frames {
		f := buf.Bytes()
		if len(f) < ethHeader+ipv4Header {
			t.app.processRest(t, b, i, out, -1)
			return
		}
		e := (*[ethHeader + ipv4Header]byte)(f)
		w0, w1, dst := le.Uint64(e[ethHeader:]), le.Uint64(e[ethHeader+8:]), le.Uint32(e[ethHeader+ipv4Dst:])
		tot := uint(bits.ReverseBytes16(uint16(w0 >> 16)))
		// The packet ends the frame, or the frame is one of at most 60 bytes, padded.
		ipLen := uint(len(f) - ethHeader)
		slack := ipLen - ipv4Header
		if len(f) > minFrame {
			slack = 0
		}
		// The destination MAC is the port's (the first 8 bytes less the source MAC's two),
		// and EtherType 0x0800 with version/IHL 0x45 in one load (the TOS byte masked), in
		// one test; the total length within the frame and at least 20 (or all of it) in
		// one comparison; TTL ≥ 2 and not a fragment past the first (its flags and offset,
		// then the TTL, rotated so that the offset is on top) in one; the source's first
		// octet (w1's fifth byte) needs no second look; the sum is not zero (the version
		// is 4), so a multiple of 0xffff verifies (see sumOK).
		if (le.Uint64(e[:])<<16^mac)|uint64(le.Uint32(e[12:])&0xffffff^0x450008) != 0 || ipLen-tot > slack ||
			bits.RotateLeft32(le.Uint32(e[ethHeader+6:])&0x00ffff1f, 16)-minForwardT >= 256-minForwardT ||
			t.suspect[uint8(w1>>32)] || (w0&0xffffffff+w0>>32+w1&0xffffffff+w1>>32+uint64(dst))%0xffff != 0 {
			t.app.processRest(t, b, i, out, -1)
			return
		}
		// Every address has a next hop: a route's, or a special one (no route, reserved,
		// local) whose MTU of 0 sends the frame to processRest.
		nh, _ := t.v4.Lookup(bits.ReverseBytes32(dst))
		h := &t.hops[nh]
		if tot > uint(h.mtu) { // over the MTU, or a special next hop (MTU 0)
			t.app.processRest(t, b, i, out, -1)
			return
		}
		decTTL((*[ipv4Header]byte)(e[ethHeader:]))
		*(*[12]byte)(e[:]) = h.macs
		if i > 0 && h.port != out {
			t.app.processRest(t, b, i, out, int(h.port))
			return
		}
		out = h.port
	}
	b.SendAll(out)
}

// processRest decides frames i and on of b one by one, frames 0 to i-1 having been
// forwarded to out. A port ≥ 0 says that frame i was forwarded already, to that port.
// A frame not forwarded is dropped, or handed to the RX port's kernel path within its
// class's rate (or dropped as policed over it), and counted.
func (a *App) processRest(t *fib, b *dataplane.Burst, i int, out dataplane.PortID, port int) {
	for j := range i {
		b.Send(j, out)
	}
	if port >= 0 {
		b.Send(i, dataplane.PortID(port))
		i++
	}
	var rx uint64
	if int(b.Port) < len(t.rxMAC) {
		rx = t.rxMAC[b.Port]
	}
	var ts *threadState
	if b.Thread >= 0 && b.Thread < len(a.threads) {
		ts = &a.threads[b.Thread]
	}
	for ; i < len(b.Frames); i++ {
		buf := b.Frames[i]
		f := buf.Bytes()
		p, n, v := t.decide(rx, f)
		if v == vForward {
			if n < len(f) {
				buf.SetLen(n)
			}
			b.Send(i, p)
			continue
		}
		r, c := verdicts[v].reason, verdicts[v].class
		if c == classLocal && (v == vLocal || v == vMulticast) {
			c = protoClass(f)
		}
		switch {
		case c == classDrop || !b.HasKernel():
			b.Drop(i, r)
		case ts == nil: // a thread beyond Config.Threads
			b.Drop(i, DropPoliced)
			continue
		case ts.buckets[c].allow(b.Time):
			b.ToKernel(i, r)
			ts.local.toKernel[c]++
		default:
			b.Drop(i, DropPoliced)
			ts.local.policed[c]++
		}
		if ts != nil {
			ts.local.byReason[r]++
			ts.dirty = true
		}
	}
	if ts != nil && ts.dirty {
		ts.publish()
	}
}

// String is the app's configuration name.
func (a *App) String() string { return "l3fwd" }

// Forward routes the Ethernet frame f received on port rx: when it is to be forwarded it
// rewrites f in place (TTL or hop limit, IPv4 checksum, MACs) and returns the output
// port, the length the frame leaves with (bytes past the IP packet trimmed, as the kernel
// trims them, but not below the 60 bytes of a padded minimum frame) and true; otherwise
// it leaves f as it was and returns why. It allocates nothing.
func (a *App) Forward(rx dataplane.PortID, f []byte) (out dataplane.PortID, n int, r dataplane.DropReason, ok bool) {
	t := a.fib.Load()
	var mac uint64
	if int(rx) < len(t.rxMAC) {
		mac = t.rxMAC[rx]
	}
	p, n, v := t.decide(mac, f)
	if v != vForward {
		return 0, len(f), verdicts[v].reason, false
	}
	return p, n, 0, true
}

// decide checks f, received on the port whose MAC is rx (a macKey), and looks its
// destination up; on vForward it has rewritten f and returns the output port and the
// frame's new length.
func (a *fib) decide(rx uint64, f []byte) (dataplane.PortID, int, verdict) {
	if len(f) < ethHeader {
		return 0, 0, vNotIP
	}
	l2cast := f[0]&1 != 0 // broadcast or multicast
	if !l2cast && macKey(f[:6]) != rx {
		return 0, 0, vNotForUs
	}
	h := f[ethHeader:]
	var nh lpm.NextHop
	var n int
	switch binary.BigEndian.Uint16(f[12:ethHeader]) {
	case etherIPv4:
		if v := checkIPv4(h); v != vForward {
			return 0, 0, v
		}
		ip := (*[ipv4Header]byte)(h)
		if ihl := int(h[0]&0xf) * 4; ihl > ipv4Header {
			if v := checkOptions(h[ipv4Header:ihl]); v != vForward {
				return 0, 0, v
			}
		}
		if binary.BigEndian.Uint16(ip[6:])&0x1fff == 1 {
			return 0, 0, vFragOffset
		}
		tot := int(binary.BigEndian.Uint16(ip[ipv4TotLen:]))
		src := binary.BigEndian.Uint32(ip[12:])
		nh4, found := a.v4.Lookup(binary.BigEndian.Uint32(ip[ipv4Dst:]))
		v := a.special(nh4, found)
		switch {
		case v == vMulticast || v == vBroadcast:
			return 0, 0, v
		case martianSrc4(src):
			return 0, 0, vMartianSrc
		}
		if v := destination(v, l2cast); v != vForward {
			return 0, 0, v
		}
		switch {
		case !found:
			return 0, 0, vNoRoute
		case src>>16 == 0xa9fe: // 169.254/16
			return 0, 0, vLinkLocal4
		case ip[ipv4TTL] < minForwardT:
			return 0, 0, vTTLExpired
		case tot > int(a.hops[nh4].mtu):
			return 0, 0, vMTU
		}
		decTTL(ip)
		nh, n = nh4, ethHeader+tot
	case etherIPv6:
		if v := checkIPv6(h); v != vForward {
			return 0, 0, v
		}
		ip := (*[ipv6Header]byte)(h)
		dst, src := (*[16]byte)(ip[ipv6Dst:]), (*[16]byte)(ip[8:])
		pay := int(binary.BigEndian.Uint16(ip[ipv6PayLen:]))
		nd := ip[6] == 58 && len(h) > ipv6Header && isND(h[ipv6Header])
		if dst[0] == 0xff {
			switch {
			case dst[1]&0xf <= 1: // scope 0 (reserved) or 1 (interface-local), RFC 4291 2.7
				return 0, 0, vMartianDst
			case nd:
				return 0, 0, vND
			}
			return 0, 0, vMulticast
		}
		if martianSrc6(src) {
			return 0, 0, vMartianSrc
		}
		if nd && ip[ipv6HopLim] == 255 { // for the link: never forwarded (RFC 4861)
			return 0, 0, vND
		}
		nh6, found := a.v6.Lookup(dst)
		if v := destination(a.special(nh6, found), l2cast); v != vForward {
			return 0, 0, v
		}
		switch {
		case !found:
			return 0, 0, vNoRoute
		case src[0] == 0xfe && src[1]&0xc0 == 0x80: // fe80::/10
			return 0, 0, vLinkLocalSrc6
		case ip[ipv6HopLim] < minForwardT:
			return 0, 0, vTTLExpired
		case ipv6Header+pay > int(a.hops[nh6].mtu):
			return 0, 0, vMTU
		}
		ip[ipv6HopLim]--
		nh, n = nh6, ethHeader+ipv6Header+pay
		if pay == 0 && ip[6] == 0 { // a jumbogram's length is in its hop-by-hop header
			n = len(f)
		}
	default:
		if t := binary.BigEndian.Uint16(f[12:ethHeader]); t == etherARP || t == etherLLDP {
			return 0, 0, vControlL2
		}
		return 0, 0, vNotIP
	}
	hp := &a.hops[nh]
	*(*[12]byte)(f) = hp.macs
	return hp.port, max(n, min(len(f), minFrame)), vForward
}

// destination is the verdict for a unicast destination whose special verdict is v (see
// special), received in a link-layer broadcast or multicast frame if l2cast: a local
// address is delivered either way, and nothing else in such a frame is forwarded.
func destination(v verdict, l2cast bool) verdict {
	if v != vLocal && l2cast {
		return vL2Broadcast
	}
	return v
}

// special is the verdict of a special next hop (a reserved or local destination),
// vForward for a route's (or no route).
func (a *fib) special(nh lpm.NextHop, found bool) verdict {
	if h := &a.hops[nh]; found && h.mtu == 0 {
		return verdict(h.port)
	}
	return vForward
}
