package l3fwd

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd/lpm"
)

// fib is one generation of the forwarding tables: the LPM tables and the next hops they
// index. It is never changed once published: Update builds the next one beside it and
// swaps the App's pointer (docs/design.md §16, "Routes from the kernel"). A poll thread
// loads the pointer once per burst and uses that generation for the whole burst; the
// garbage collector frees a generation only when no thread holds it any more, which is
// the grace period an RCU scheme waits for.
type fib struct {
	v4      *lpm.Table4
	v6      *lpm.Table6
	hops    []hop
	rxMAC   []uint64            // by PortID: the port's own MAC (macKey), SetPort's or New's
	suspect [256]bool           // suspectSrc4, here so that the fast path indexes off the generation alone
	hopOf   map[hop]lpm.NextHop // hops' index, for Update (never read by the threads)
	app     *App                // the generation's App, for Process's slow path
	info    FIBStats
}

// FIBStats describe the forwarding table in force.
type FIBStats struct {
	// Generation counts the tables published: 1 for New's, one more for each Update.
	Generation uint64
	// Updated is when the generation was published.
	Updated time.Time
	// Static and Dynamic are the routes in force from Config.Routes and from Update
	// (unresolved ones included), Local the receive routes (Config.Local and Update's).
	Static, Dynamic, Local int
	// Unresolved are the dynamic routes whose next hop has no MAC yet: their frames go to
	// the kernel path (reason unresolved).
	Unresolved int
	// Shadowed are the dynamic routes and local prefixes left out because a static one
	// (or an earlier dynamic one) has the same prefix; Refused those left out because
	// l3fwd never routes them (a reserved destination, a bad port or MAC).
	Shadowed, Refused int
	// OverLimit are the dynamic routes and local prefixes left out because their family
	// had Max4 or Max6 entries already (the entries in force kept first, then the
	// others in Update's order); FirstOverLimit is the first of them.
	OverLimit      int
	FirstOverLimit netip.Prefix
	// Routes4 and Routes6 are the entries of each family in force (routes and local
	// prefixes, static and dynamic), Max4 and Max6 their limits (Config.MaxRoutes4, 6).
	Routes4, Routes6, Max4, Max6 int
	// Memory is the bytes of the lookup tables.
	Memory int
	// Pages4 is what pages the IPv4 first level lies on, measured when the generation
	// was built (a generation that left the IPv4 table as it was keeps its measure).
	Pages4 lpm.PageInfo
}

// family is 0 for an IPv4 prefix, 1 for IPv6.
func family(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 0
	}
	return 1
}

// limitError is New's error for static entries over a limit.
func limitError(p netip.Prefix, n, limit int) error {
	fam, key := "IPv4", "MaxRoutes4"
	if family(p) == 1 {
		fam, key = "IPv6", "MaxRoutes6"
	}
	return fmt.Errorf("%v: more than %d %s routes and local prefixes (the limit, %s)", p, limit, fam, key)
}

// DropUnresolved: a route whose next hop has no resolved neighbour yet (a route from the
// kernel, Update): to the kernel (error class), which resolves it and forwards the frame;
// the next frames take the fast path once the neighbour is known.
var DropUnresolved = dataplane.RegisterDropReason("unresolved")

// builder builds one fib generation.
type builder struct {
	a     *App
	f     *fib
	hopOf map[hop]lpm.NextHop
	seen  map[netip.Prefix]string
}

func (a *App) newBuilder() *builder {
	return &builder{a: a, f: &fib{v4: lpm.NewTable4(), v6: lpm.NewTable6(), rxMAC: a.rxMAC, suspect: suspectSrc4, app: a}, hopOf: map[hop]lpm.NextHop{}, seen: map[netip.Prefix]string{}}
}

func (b *builder) addHop(h hop) (lpm.NextHop, error) {
	nh, ok := b.hopOf[h]
	if !ok {
		nh = lpm.NextHop(len(b.f.hops))
		if nh > lpm.MaxNextHop {
			return 0, fmt.Errorf("more than %d next hops", lpm.MaxNextHop+1)
		}
		b.f.hops = append(b.f.hops, h)
		b.hopOf[h] = nh
	}
	return nh, nil
}

func (b *builder) insert(p netip.Prefix, h hop) error {
	nh, err := b.addHop(h)
	if err != nil {
		return err
	}
	if p.Addr().Is4() {
		return b.f.v4.Insert(p, nh)
	}
	return b.f.v6.Insert(p, nh)
}

// route inserts r (checked) as a forwarding route, or an unresolved one.
func (b *builder) route(r Route) error { return b.insert(r.Prefix, b.a.hopFor(r)) }

// static inserts the static routes and local prefixes, and the reserved destinations,
// refusing what is wrong (New's errors).
func (b *builder) static() error {
	a := b.a
	for i, r := range a.static {
		if err := checkRoute(r, len(a.ports)); err != nil {
			return fmt.Errorf("route %d (%v): %w", i, r.Prefix, err)
		}
		if err := checkReserved(r.Prefix, false); err != nil {
			return fmt.Errorf("route %d (%v): %w", i, r.Prefix, err)
		}
		if what, dup := b.seen[r.Prefix]; dup {
			return fmt.Errorf("route %d (%v): same prefix as %s", i, r.Prefix, what)
		}
		b.seen[r.Prefix] = fmt.Sprintf("route %d", i)
		if err := b.count(r.Prefix); err != nil {
			return fmt.Errorf("route %d: %w", i, err)
		}
		if err := b.route(r); err != nil {
			return fmt.Errorf("route %d: %w", i, err)
		}
		b.f.info.Static++
	}
	for _, r := range reserved {
		if err := b.insert(r.prefix, hop{port: dataplane.PortID(r.v)}); err != nil {
			return fmt.Errorf("reserved %v: %w", r.prefix, err)
		}
	}
	for i, p := range a.staticLocal {
		if err := checkLocal(p); err != nil {
			return fmt.Errorf("local %d (%v): %w", i, p, err)
		}
		if what, dup := b.seen[p]; dup {
			return fmt.Errorf("local %d (%v): same prefix as %s", i, p, what)
		}
		b.seen[p] = fmt.Sprintf("local %d", i)
		if err := b.count(p); err != nil {
			return fmt.Errorf("local %d: %w", i, err)
		}
		if err := b.insert(p, hop{port: dataplane.PortID(vLocal)}); err != nil {
			return fmt.Errorf("local %d: %w", i, err)
		}
		b.f.info.Local++
	}
	return nil
}

// count counts a static entry against its family's limit.
func (b *builder) count(p netip.Prefix) error {
	n, limit := &b.f.info.Routes4, b.a.max4
	if family(p) == 1 {
		n, limit = &b.f.info.Routes6, b.a.max6
	}
	if *n >= limit {
		return limitError(p, *n, limit)
	}
	*n++
	return nil
}

// finish gives every destination no route covers the no-route next hop, so that a
// lookup always finds one, and stamps the generation.
func (b *builder) finish(gen uint64) (*fib, error) {
	for _, p := range []netip.Prefix{netip.PrefixFrom(netip.IPv4Unspecified(), 0), netip.PrefixFrom(netip.IPv6Unspecified(), 0)} {
		if _, ok := b.seen[p]; !ok {
			if err := b.insert(p, hop{port: dataplane.PortID(vNoRoute)}); err != nil {
				return nil, fmt.Errorf("no route %v: %w", p, err)
			}
		}
	}
	b.f.hopOf = b.hopOf
	b.f.info.Generation = gen
	b.f.info.Updated = time.Now()
	b.f.info.Memory = b.f.v4.Memory() + b.f.v6.Memory()
	b.f.info.Max4, b.f.info.Max6 = b.a.max4, b.a.max6
	b.f.info.Pages4 = b.f.v4.Pages()
	return b.f, nil
}

// checkLocal refuses a local prefix that is not one, or lies in a reserved destination
// other than the link-local ranges.
func checkLocal(p netip.Prefix) error {
	if err := checkPrefix(p); err != nil {
		return err
	}
	return checkReserved(p, true)
}

// checkPrefix refuses what is not an IPv4 or IPv6 prefix with no bits beyond its length.
func checkPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid() || p.Addr().Is4In6() || p.Addr().Zone() != "":
		return fmt.Errorf("not an IPv4 or IPv6 prefix")
	case p.Masked() != p:
		return fmt.Errorf("bits set beyond the prefix length (the prefix is %v)", p.Masked())
	}
	return nil
}

// Update replaces the dynamic part of the routing table (the routes and receive routes
// the kernel has: daemon/fib_linux.go) and publishes the new table without stopping the
// poll threads: it copies the tables in force (only the families that change), applies
// the difference from the previous Update to the copy, then swaps one pointer, which the
// threads load once per burst. The static routes and local prefixes of Config are
// pinned: a dynamic route or local prefix for the same prefix as a static one is left out
// (Shadowed), and so is a dynamic route for the prefix of a dynamic local one (the
// kernel's local table is consulted first, too) or of an earlier one. Dynamic entries
// l3fwd never routes (inside a reserved destination, a port it does not have) are left
// out and counted (Refused); only a table that cannot hold them all is an error, which
// keeps the table in force. Update may be called from any goroutine; one call runs at a
// time.
func (a *App) Update(routes []Route, local []netip.Prefix) (FIBStats, error) {
	a.updateMu.Lock()
	defer a.updateMu.Unlock()
	info := FIBStats{Static: a.base.Static, Local: a.base.Local, Routes4: a.base.Routes4, Routes6: a.base.Routes6, Max4: a.max4, Max6: a.max6}
	// The entries to take, checked, in order: the ones in force first, so that a full
	// table refuses what is new rather than trading one route for another.
	type entry struct {
		p     netip.Prefix
		h     hop
		local bool
		unres bool
	}
	var take, later []entry
	add := func(e entry) {
		if _, in := a.dyn[e.p]; in {
			take = append(take, e)
		} else {
			later = append(later, e)
		}
	}
	for _, p := range local {
		if checkLocal(p) != nil {
			info.Refused++
			continue
		}
		add(entry{p: p, h: hop{port: dataplane.PortID(vLocal)}, local: true})
	}
	for _, r := range routes {
		if (!r.Unresolved && checkRoute(r, len(a.ports)) != nil) || (r.Unresolved && checkPrefix(r.Prefix) != nil) ||
			checkReserved(r.Prefix, false) != nil {
			info.Refused++
			continue
		}
		add(entry{p: r.Prefix, h: a.hopFor(r), unres: r.Unresolved})
	}
	// Local prefixes win over routes for the same prefix whichever pass they are in.
	localP := map[netip.Prefix]bool{}
	for _, e := range append(take, later...) {
		if e.local {
			localP[e.p] = true
		}
	}
	want := make(map[netip.Prefix]hop, len(take)+len(later))
	for _, e := range append(take, later...) {
		if _, dup := want[e.p]; dup || a.pinned[e.p] || (!e.local && localP[e.p]) {
			info.Shadowed++
			continue
		}
		n, limit := &info.Routes4, a.max4
		if family(e.p) == 1 {
			n, limit = &info.Routes6, a.max6
		}
		if *n >= limit {
			if info.OverLimit == 0 {
				info.FirstOverLimit = e.p
			}
			info.OverLimit++
			continue
		}
		*n++
		want[e.p] = e.h
		switch {
		case e.local:
			info.Local++
		case e.unres:
			info.Dynamic++
			info.Unresolved++
		default:
			info.Dynamic++
		}
	}
	old := a.fib.Load()
	u := fibUpdate{old: old, f: &fib{v4: old.v4, v6: old.v6, hops: old.hops, rxMAC: old.rxMAC, suspect: old.suspect, hopOf: old.hopOf, app: a}}
	for p := range a.dyn {
		if _, keep := want[p]; !keep {
			if err := u.remove(p); err != nil {
				a.updateErrors.Add(1)
				return FIBStats{}, fmt.Errorf("update: delete %v: %w", p, err)
			}
		}
	}
	for p, h := range want {
		if was, ok := a.dyn[p]; ok && was == h {
			continue
		}
		if err := u.insert(p, h); err != nil {
			a.updateErrors.Add(1)
			return FIBStats{}, fmt.Errorf("update: %w", err)
		}
	}
	a.dyn = want
	f := u.f
	info.Generation = old.info.Generation + 1
	info.Updated = time.Now()
	info.Memory = f.v4.Memory() + f.v6.Memory()
	info.Pages4 = old.info.Pages4
	if u.own4 {
		info.Pages4 = f.v4.Pages()
	}
	f.info = info
	a.fib.Store(f)
	return info, nil
}

// SetPort gives port a new MAC and MTU (0: DefaultMTU), as the port's kernel path
// follows a change the kernel side made on its TAP (daemon/tapfollow_linux.go): frames
// to the new MAC are the port's own, and every next hop leaving by it takes the new
// source MAC and MTU. Like Update it publishes a new generation beside the one in force
// (the LPM tables are shared, only the next hops are copied) without stopping the poll
// threads; one call of either runs at a time.
func (a *App) SetPort(port dataplane.PortID, mac net.HardwareAddr, mtu int) (FIBStats, error) {
	switch {
	case int(port) >= len(a.ports):
		return FIBStats{}, fmt.Errorf("set port %d: the dataplane has %d ports", port, len(a.ports))
	case len(mac) != 6 || mac[0]&1 != 0:
		return FIBStats{}, fmt.Errorf("set port %d: MAC %v: want a unicast Ethernet address", port, mac)
	case mtu != 0 && (mtu < 68 || mtu > 65535):
		return FIBStats{}, fmt.Errorf("set port %d: MTU %d: want 68 to 65535", port, mtu)
	}
	if mtu == 0 {
		mtu = DefaultMTU
	}
	a.updateMu.Lock()
	defer a.updateMu.Unlock()
	a.ports[port] = slices.Clone(mac)
	for len(a.mtu) <= int(port) {
		a.mtu = append(a.mtu, 0)
	}
	a.mtu[port] = mtu
	old := a.fib.Load()
	f := &fib{v4: old.v4, v6: old.v6, hops: slices.Clone(old.hops), rxMAC: slices.Clone(old.rxMAC), suspect: old.suspect,
		hopOf: make(map[hop]lpm.NextHop, len(old.hopOf)), app: a}
	f.rxMAC[port] = macKey(mac)
	follow := func(h hop) hop {
		if h.port == port && h.mtu != 0 { // a route's next hop (special ones have MTU 0)
			copy(h.macs[6:], mac)
			h.mtu = uint16(mtu)
		}
		return h
	}
	for i, h := range f.hops {
		f.hops[i] = follow(h)
		if _, dup := f.hopOf[f.hops[i]]; !dup {
			f.hopOf[f.hops[i]] = lpm.NextHop(i)
		}
	}
	for p, h := range a.dyn {
		a.dyn[p] = follow(h)
	}
	f.info = old.info
	f.info.Generation = old.info.Generation + 1
	f.info.Updated = time.Now()
	a.fib.Store(f)
	return f.info, nil
}

// hopFor is the next hop of a checked route.
func (a *App) hopFor(r Route) hop {
	if r.Unresolved {
		return hop{port: dataplane.PortID(vUnresolved)}
	}
	h := hop{port: r.Port, mtu: DefaultMTU}
	if int(r.Port) < len(a.mtu) && a.mtu[r.Port] != 0 {
		h.mtu = uint16(a.mtu[r.Port])
	}
	copy(h.macs[:6], r.NextHopMAC)
	copy(h.macs[6:], a.ports[r.Port])
	return h
}

// fibUpdate is the generation Update builds from old: a table is copied when it is
// first changed, and so are the next hops when one is added.
type fibUpdate struct {
	old              *fib
	f                *fib
	own4, own6, hops bool
}

func (u *fibUpdate) table4() *lpm.Table4 {
	if !u.own4 {
		u.f.v4, u.own4 = u.old.v4.Clone(), true
	}
	return u.f.v4
}

func (u *fibUpdate) table6() *lpm.Table6 {
	if !u.own6 {
		u.f.v6, u.own6 = u.old.v6.Clone(), true
	}
	return u.f.v6
}

func (u *fibUpdate) insert(p netip.Prefix, h hop) error {
	nh, ok := u.f.hopOf[h]
	if !ok {
		nh = lpm.NextHop(len(u.f.hops))
		if nh > lpm.MaxNextHop {
			return fmt.Errorf("more than %d next hops", lpm.MaxNextHop+1)
		}
		if !u.hops {
			u.f.hops, u.f.hopOf, u.hops = slices.Clip(u.f.hops), maps.Clone(u.f.hopOf), true
		}
		u.f.hops = append(u.f.hops, h)
		u.f.hopOf[h] = nh
	}
	if p.Addr().Is4() {
		return u.table4().Insert(p, nh)
	}
	return u.table6().Insert(p, nh)
}

// remove takes a dynamic entry out: a default route gives way to the no-route next hop
// (a static default route would have shadowed it), any other to the routes covering it.
func (u *fibUpdate) remove(p netip.Prefix) error {
	if p.Bits() == 0 {
		return u.insert(p, hop{port: dataplane.PortID(vNoRoute)})
	}
	if p.Addr().Is4() {
		return u.table4().Delete(p)
	}
	return u.table6().Delete(p)
}

// FIB describes the table in force.
func (a *App) FIB() FIBStats { return a.fib.Load().info }

// UpdateErrors counts the Update calls that failed (the table in force kept).
func (a *App) UpdateErrors() uint64 { return a.updateErrors.Load() }
