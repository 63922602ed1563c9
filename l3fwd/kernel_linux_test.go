package l3fwd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/ixgbe" // the driver of the model ports
	"github.com/uiod/uiod/nic/tap"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// The comparison's addresses. The sender (gen) is 192.0.2.1 and 2001:db8:f0::2 behind
// port 0; the next hops are on port 1's link. The kernel router holds the .254 and ::1
// addresses its neighbours need; so does uiod's kernel path, and l3fwd lists them as
// local.
var (
	macGen = net.HardwareAddr{0x02, 0, 0, 0, 0x99, 1}
	nhA    = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 0x0a} // 10.1.0.0/16
	nhB    = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 0x0b} // 10.1.2.3/32
	nhC    = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 0x0c} // default
	nhD    = net.HardwareAddr{0x02, 0, 0, 0, 0xbb, 0x0d} // 2001:db8:1::/48

	kernelRoutes = []struct {
		prefix, via string
		mac         net.HardwareAddr
	}{
		{"10.1.0.0/16", "198.51.100.11", nhA},
		{"10.1.2.3/32", "198.51.100.12", nhB},
		{"0.0.0.0/0", "198.51.100.13", nhC},
		{"2001:db8:1::/48", "2001:db8:f1::11", nhD},
	}
	rrSlot = netip.MustParseAddr("198.51.100.254") // r1's address: what the kernel records
)

// mtu1 is port 1's MTU on both routers (r1, u1k and l3fwd's), below the cables' 1500, so
// that a frame can be too big for it.
const mtu1 = 1400

// kernelCase is one frame of the comparison, sent into port 0 of both routers.
type kernelCase struct {
	name    string
	f       frame
	forward bool
	reason  string // uiod's drop reason when not forwarded
	// icmp is the ICMP (or ICMPv6) type the kernel sends back to the sender instead, 0
	// none. uiod's fast path drops those frames (or hands them to the port's kernel
	// path, when it has one, which then sends the same error).
	icmp byte
	// rr: the frame carries a Record Route option. The kernel fills its slot with its
	// output address (RFC 791); l3fwd, like DPDK's, forwards options untouched.
	rr bool
	// differs says why the kernel forwards a frame uiod does not (an RFC's MUST NOT
	// that Linux does not follow, or an attack VPP drops).
	differs string
}

func kernelCases() []kernelCase {
	v4 := func(to string, ttl uint8) frame {
		return frame{dst: macP0, src: macGen, from: src4Gen, to: netip.MustParseAddr(to), ttl: ttl, payload: 32}
	}
	v6 := func(to string, ttl uint8) frame {
		return frame{dst: macP0, src: macGen, from: src6Gen, to: netip.MustParseAddr(to), ttl: ttl, payload: 32}
	}
	with := func(f frame, m func(*frame)) frame { m(&f); return f }
	from := func(f frame, src string) frame { f.from = netip.MustParseAddr(src); return f }
	l2 := func(f frame, mac string) frame { f.dst, _ = net.ParseMAC(mac); return f }
	noDF := func(b []byte) { b[14+6] &^= 0x40; fixCheck(b) }
	return []kernelCase{
		{name: "ttl 64", f: v4("10.1.9.9", 64), forward: true},
		{name: "ttl 1", f: v4("10.1.9.9", 1), reason: "ttl_expired", icmp: 11},
		{name: "bad checksum", f: with(v4("10.1.9.9", 64), func(f *frame) { f.badCheck = true }), reason: "bad_header"},
		{name: "ip options (nop)", f: with(v4("10.1.9.9", 64), func(f *frame) { f.options = []byte{1, 1, 1, 0} }), forward: true},
		{name: "ip options (record route)", f: with(v4("10.1.9.9", 64), func(f *frame) { f.options = []byte{7, 7, 4, 0, 0, 0, 0, 0} }), forward: true, rr: true},
		{name: "/32 host route", f: v4("10.1.2.3", 64), forward: true},
		{name: "default route", f: v4("203.0.113.9", 64), forward: true},
		{name: "ipv6 hop limit 64", f: v6("2001:db8:1::9", 64), forward: true},
		{name: "ipv6 hop limit 1", f: v6("2001:db8:1::9", 1), reason: "ttl_expired", icmp: 3},
		{name: "ipv6 no route", f: v6("2001:db8:2::9", 64), reason: "no_route", icmp: 1},
		{name: "not ip", f: frame{dst: macP0, src: macGen, etherType: 0x88b5}, reason: "not_ip"},
		// What a router must not forward, and what is for the router itself.
		{name: "limited broadcast", f: l2(v4("255.255.255.255", 64), "ff:ff:ff:ff:ff:ff"), reason: "broadcast"},
		{name: "mDNS 224.0.0.251", f: l2(v4("224.0.0.251", 255), "01:00:5e:00:00:fb"), reason: "multicast"},
		{name: "multicast to the router's MAC", f: v4("239.1.1.1", 64), reason: "multicast"},
		{name: "loopback destination", f: v4("127.0.0.1", 64), reason: "martian_destination"},
		{name: "source 0.0.0.0", f: from(v4("10.1.9.9", 64), "0.0.0.0"), reason: "martian_source"},
		{name: "source 127.0.0.1", f: from(v4("10.1.9.9", 64), "127.0.0.1"), reason: "martian_source"},
		{name: "multicast source", f: from(v4("10.1.9.9", 64), "224.0.0.1"), reason: "martian_source"},
		{name: "unicast IP in link-layer broadcast", f: l2(v4("10.1.9.9", 64), "ff:ff:ff:ff:ff:ff"), reason: "l2_broadcast"},
		{name: "frame for another host's MAC", f: l2(v4("10.1.9.9", 64), "02:00:00:00:dd:01"), reason: "not_for_us"},
		{name: "to the router's address", f: v4("192.0.2.254", 64), reason: "local", icmp: 3},
		{name: "LSRR", f: with(v4("10.1.9.9", 64), func(f *frame) { f.options = []byte{131, 7, 4, 198, 51, 100, 7, 0} }), reason: "source_route"},
		{name: "trailing bytes", f: with(v4("10.1.9.9", 64), func(f *frame) { f.trailer = 100 }), forward: true},
		{name: "over the MTU with DF", f: with(v4("10.1.9.9", 64), func(f *frame) { f.payload = 1422 }), reason: "mtu_exceeded", icmp: 3},
		{name: "over the MTU without DF", f: with(v4("10.1.9.9", 64), func(f *frame) { f.payload, f.mangle = 1422, noDF }), reason: "mtu_exceeded", forward: true},
		{name: "ipv6 over the MTU", f: with(v6("2001:db8:1::9", 64), func(f *frame) { f.payload = 1400 }), reason: "mtu_exceeded", icmp: 2},
		{name: "ipv6 NS to solicited-node", f: with(l2(v6("ff02::1:ff00:1", 255), "33:33:ff:00:00:01"), func(f *frame) { f.mangle = icmp6(135) }), reason: "neighbour_discovery"},
		{name: "ipv6 multicast", f: l2(v6("ff05::fb", 64), "33:33:00:00:00:fb"), reason: "multicast"},
		{name: "ipv6 link-local destination", f: v6("fe80::1", 64), reason: "link_local"},
		{name: "ipv6 link-local source", f: from(v6("2001:db8:1::9", 64), "fe80::2"), reason: "link_local"},
		{name: "ipv6 loopback destination", f: v6("::1", 64), reason: "martian_destination"},
		{name: "ipv6 mapped source", f: from(v6("2001:db8:1::9", 64), "::ffff:192.0.2.1"), forward: true},
		// uiod is stricter than Linux here.
		{name: "0/8 destination", f: v4("0.1.2.3", 64), reason: "martian_destination", differs: "RFC 1812 5.3.7, RFC 6890: not forwardable (Linux forwards it since 5.3)"},
		{name: "link-local destination", f: v4("169.254.1.1", 64), reason: "link_local", differs: "RFC 3927 7: MUST NOT forward"},
		{name: "link-local source", f: from(v4("10.1.9.9", 64), "169.254.1.1"), reason: "link_local", differs: "RFC 3927 7: MUST NOT forward"},
		{name: "fragment at offset 1", f: with(v4("10.1.9.9", 64), func(f *frame) {
			f.mangle = func(b []byte) { b[14+6], b[14+7] = 0x20, 1; fixCheck(b) }
		}), reason: "fragment_offset", differs: "RFC 1858's overlap attack, which VPP drops"},
	}
}

var (
	src4Gen = netip.MustParseAddr("192.0.2.1")
	src6Gen = netip.MustParseAddr("2001:db8:f0::2")
)

// TestIntegrationL3fwdKernel sends the same frames once through uiod's l3fwd (two model
// 82599 ports on AF_PACKET wires, driven by the ixgbe driver and the dataplane) and once
// through the Linux kernel's forwarding with the same routes and static neighbours, each
// in its own network namespace, and compares what leaves: what each forwards, byte for
// byte, and the ICMP errors each sends back (uiod's from the kernel behind its kernel
// paths, which has the same addresses, routes and neighbours). Then the sender resolves
// the router's addresses (ARP, IPv6 ND) and pings them through each.
//
//	gen: g0 ── r0 [rtr: the kernel] r1 ── g1
//	     g2 ── u0 [uio: uiod l3fwd] u1 ── g3
//	                 │          │
//	                u0k [kns]  u1k      (uiod's kernel paths, TAPs)
func TestIntegrationL3fwdKernel(t *testing.T) {
	id := fmt.Sprintf("l3k%d", os.Getpid()%100000)
	gen := testutil.Netns(t, id+"gen")
	rtr := testutil.Netns(t, id+"rtr")
	uio := testutil.Netns(t, id+"uio")
	kns := testutil.Netns(t, id+"k")        // uiod's kernel path: its TAPs
	for _, ns := range []string{gen, uio} { // no IPv6 chatter (DAD, MLD) from the ends and uiod's cables
		testutil.Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6", "1")
		testutil.Sysctl(t, ns, "net.ipv6.conf.default.disable_ipv6", "1")
	}
	// Both kernels route: rtr as the reference, kns's as uiod's slow path behind its TAPs
	// (which sends the ICMP errors, answers ARP, ND and what is sent to its addresses, and
	// fragments). The TAPs are not in uio, whose kernel must not see uiod's cables' frames.
	for _, ns := range []string{rtr, kns} {
		for _, kv := range [][2]string{{"net.ipv4.ip_forward", "1"}, {"net.ipv6.conf.all.forwarding", "1"},
			{"net.ipv4.conf.all.rp_filter", "0"}, {"net.ipv4.conf.default.rp_filter", "0"},
			{"net.ipv4.icmp_ratelimit", "0"}, {"net.ipv6.icmp.ratelimit", "0"}} {
			testutil.Sysctl(t, ns, kv[0], kv[1])
		}
	}
	for i, peer := range []struct{ ns, name string }{{rtr, "r0"}, {rtr, "r1"}, {uio, "u0"}, {uio, "u1"}} {
		g := fmt.Sprintf("g%d", i)
		testutil.IP(t, "-n", gen, "link", "add", g, "address", macGen.String(), "type", "veth", "peer", "name", peer.name, "netns", peer.ns)
		testutil.IP(t, "-n", gen, "link", "set", g, "up")
		testutil.IP(t, "-n", peer.ns, "link", "set", peer.name, "address", []net.HardwareAddr{macP0, macP1}[i%2].String(), "up")
	}
	testutil.IP(t, "-n", rtr, "link", "set", "r1", "mtu", fmt.Sprint(mtu1))
	// uiod's kernel paths: a TAP per port with the port's MAC (and port 1's MTU).
	var taps [2]*tap.Port
	for i := range taps {
		if err := testutil.InNetns(kns, func() (err error) {
			taps[i], err = tap.Open(tap.Config{Name: fmt.Sprintf("u%dk", i), MAC: []net.HardwareAddr{macP0, macP1}[i], MTU: []int{1500, mtu1}[i]})
			return err
		}); err != nil {
			t.Skipf("no TAP: %v", err)
		}
		t.Cleanup(func() { taps[i].Close() })
		testutil.Sysctl(t, kns, fmt.Sprintf("net.ipv6.conf.u%dk.disable_ipv6", i), "0")
	}
	var routes []Route
	for _, k := range []struct{ ns, p0, p1 string }{{rtr, "r0", "r1"}, {kns, "u0k", "u1k"}} {
		testutil.IP(t, "-n", k.ns, "addr", "add", "192.0.2.254/24", "dev", k.p0)
		testutil.IP(t, "-n", k.ns, "addr", "add", "198.51.100.254/24", "dev", k.p1)
		testutil.IP(t, "-n", k.ns, "addr", "add", "2001:db8:f0::1/64", "dev", k.p0, "nodad")
		testutil.IP(t, "-n", k.ns, "addr", "add", "2001:db8:f1::1/64", "dev", k.p1, "nodad")
		testutil.IP(t, "-n", k.ns, "neigh", "replace", "192.0.2.1", "lladdr", macGen.String(), "dev", k.p0, "nud", "permanent")
		testutil.IP(t, "-n", k.ns, "neigh", "replace", "2001:db8:f0::2", "lladdr", macGen.String(), "dev", k.p0, "nud", "permanent")
		for _, r := range kernelRoutes {
			testutil.IP(t, "-n", k.ns, "neigh", "replace", r.via, "lladdr", r.mac.String(), "dev", k.p1, "nud", "permanent")
			testutil.IP(t, "-n", k.ns, "route", "replace", r.prefix, "via", r.via, "dev", k.p1)
			if k.ns == rtr {
				routes = append(routes, Route{Prefix: netip.MustParsePrefix(r.prefix), Port: 1, NextHopMAC: r.mac})
			}
		}
	}
	var local []netip.Prefix
	for _, a := range []string{"192.0.2.254/32", "198.51.100.254/32", "2001:db8:f0::1/128", "2001:db8:f1::1/128"} {
		local = append(local, netip.MustParsePrefix(a))
	}
	app, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: routes, Local: local, MTU: []int{1500, mtu1}, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	dp := startModelRouter(t, uio, app, [2]nic.Port{taps[0], taps[1]})

	// The test's ends: g0, g1 face the kernel, g2, g3 uiod.
	var mu sync.Mutex
	seen := make([][][]byte, 4)
	var ends []wire.Port
	for i := range 4 {
		var p wire.Port
		if err := testutil.InNetns(gen, func() (err error) { p, err = wire.ListenPacket(fmt.Sprintf("g%d", i)); return }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		p.SetHandler(func(f []byte, ts int64) {
			mu.Lock()
			seen[i] = append(seen[i], bytes.Clone(f))
			mu.Unlock()
		})
		ends = append(ends, p)
	}
	cases := kernelCases()
	sentinel := kernelCase{f: frame{dst: macP0, src: macGen, from: src4Gen, to: netip.MustParseAddr("10.1.9.9"), ttl: 64, payload: 32}}
	cases = append(cases, sentinel)
	for i := range cases {
		cases[i].f.tag = uint16(i)
		b := cases[i].f.build()
		for _, e := range []wire.Port{ends[0], ends[2]} {
			if err := e.Send(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := uint16(len(cases) - 1)
	tagged := func(end int, tag uint16) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range seen[end] {
			if tg, ok := frameTag(f); ok && tg == tag {
				n++
			}
		}
		return n
	}
	// Both routers have forwarded the sentinel, sent after every other frame, and uiod has
	// decided all of them; the kernel's ICMP errors are all back.
	if !testutil.WaitFor(10*time.Second, func() bool { return tagged(1, last) > 0 && tagged(3, last) > 0 }) {
		t.Fatalf("the sentinel frame did not come through: kernel %d, uiod %d", tagged(1, last), tagged(3, last))
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return rxTotal(dp) == uint64(len(cases)) }, "uiod received %d of %d frames", rxTotal(dp), len(cases))
	testutil.Eventually(t, 5*time.Second, func() bool {
		for i, c := range cases {
			if c.icmp != 0 && (icmpsFor(seen, &mu, 0, uint16(i), c.icmp) == 0 || icmpsFor(seen, &mu, 2, uint16(i), c.icmp) == 0) {
				return false
			}
		}
		return true
	}, "the kernels' ICMP errors did not all come back")
	time.Sleep(100 * time.Millisecond) // a frame either router wrongly sent has arrived by now

	mu.Lock()
	defer mu.Unlock()
	out := func(end int, tag uint16) (fs [][]byte) {
		for _, f := range seen[end] {
			if tg, ok := frameTag(f); ok && tg == tag && !isICMPError(f) {
				fs = append(fs, f)
			}
		}
		return fs
	}
	for i, c := range cases[:len(cases)-1] {
		tag := uint16(i)
		kOut, uOut := out(1, tag), out(3, tag)
		if back := len(out(0, tag)) + len(out(2, tag)); back != 0 {
			t.Errorf("%s: %d frames sent back out of port 0", c.name, back)
		}
		if c.differs != "" {
			if len(kOut) != 1 || len(uOut) != 0 {
				t.Errorf("%s: forwarded by the kernel %d times and by uiod %d, want once and not (%s)", c.name, len(kOut), len(uOut), c.differs)
			}
			t.Logf("%s: forwarded by the kernel, dropped by uiod (%s)", c.name, c.differs)
			continue
		}
		if !c.forward {
			if len(kOut) != 0 || len(uOut) != 0 {
				t.Errorf("%s: forwarded (kernel %d, uiod %d), want dropped by both", c.name, len(kOut), len(uOut))
			}
			k, u := icmpsFor(seen, nil, 0, tag, c.icmp), icmpsFor(seen, nil, 2, tag, c.icmp)
			t.Logf("%s: not forwarded by either; ICMP type %d: the kernel sent %d, uiod's kernel path %d", c.name, c.icmp, k, u)
			if c.icmp != 0 && (k == 0 || u == 0) {
				t.Errorf("%s: ICMP type %d: the kernel sent %d, uiod's kernel path %d", c.name, c.icmp, k, u)
			}
			if c.icmp != 0 && k > 0 && u > 0 {
				compareICMP(t, c.name, icmpOf(seen, 0, tag, c.icmp), icmpOf(seen, 2, tag, c.icmp))
			}
			continue
		}
		t.Logf("%s: kernel %d, uiod %d forwarded", c.name, len(kOut), len(uOut))
		if len(kOut) != 1 || len(uOut) != 1 {
			t.Errorf("%s: forwarded %d times by the kernel and %d by uiod, want once each", c.name, len(kOut), len(uOut))
			continue
		}
		want := kOut[0]
		got := uOut[0]
		if c.rr {
			// What the kernel does beyond l3fwd: record its address, move the pointer,
			// and so a checksum over the changed option.
			got = bytes.Clone(got)
			h := got[14:]
			copy(h[ipv4Header+3:], rrSlot.AsSlice())
			h[ipv4Header+2] += 4
			ihl := int(h[0]&0xf) * 4
			binary.BigEndian.PutUint16(h[ipv4Check:], 0)
			binary.BigEndian.PutUint16(h[ipv4Check:], ^checksum(h[:ihl]))
			if bytes.Equal(uOut[0], kOut[0]) {
				t.Errorf("%s: uiod recorded a route as the kernel does; l3fwd should leave options alone", c.name)
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: forwarded frames differ\nkernel % x\n  uiod % x", c.name, want, got)
		}
	}
	// l3fwd counted each frame it did not forward under its reason.
	wantDrops := map[string]uint64{}
	for _, c := range cases {
		if c.reason != "" {
			wantDrops[c.reason]++
		}
	}
	if got := app.Stats().NotForwarded; fmt.Sprint(got) != fmt.Sprint(wantDrops) {
		t.Errorf("uiod did not forward, by reason, %v; want %v", got, wantDrops)
	}
	mu.Unlock()
	checkResolve(t, app, ends, seen, &mu)
	mu.Lock()
}

// startModelRouter runs app on two model 82599 ports whose cables are AF_PACKET sockets
// on u0 and u1 in namespace ns, promiscuous (so that l3fwd's own MAC check is what
// decides), with the kernel paths k: one poll thread with a TX queue on both ports and
// both kernel paths.
func startModelRouter(t *testing.T, ns string, app dataplane.App, k [2]nic.Port) *dataplane.Dataplane {
	t.Helper()
	iommu := sim.NewIOMMU()
	var ports []nic.Port
	for i, mac := range []net.HardwareAddr{macP0, macP1} {
		var w wire.Port
		if err := testutil.InNetns(ns, func() (err error) { w, err = wire.ListenPacket(fmt.Sprintf("u%d", i)); return }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		m, err := intel.New(intel.Config{Addr: pci.Addr{Domain: 0xffff, Device: uint8(i)}, MAC: mac, Wire: w, IOMMU: iommu})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		p, err := nic.Open(m.PCI(), "ixgbe", nic.Config{Promiscuous: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ports = append(ports, p)
	}
	return startDataplane(t, dataplane.Config{
		Ports: []dataplane.Port{{Name: "p0", NIC: ports[0], Kernel: k[0]}, {Name: "p1", NIC: ports[1], Kernel: k[1]}},
		Threads: []dataplane.Thread{{CPU: -1,
			Queues: []dataplane.Queue{{Name: "p0", RxPort: ports[0], TxPort: ports[0]}, {Name: "p1", RxPort: ports[1], TxPort: ports[1]},
				{Name: "k0", RxPort: k[0], TxPort: ports[0]}, {Name: "k1", RxPort: k[1], TxPort: ports[1]}},
			Tx: []dataplane.TxQueue{{Port: ports[0]}, {Port: ports[1]}, {Port: k[0]}, {Port: k[1]}},
		}},
		App:    app,
		Policy: idle.DefaultPolicy(),
	})
}

// rxTotal is what the ports received (not the kernel paths).
func rxTotal(dp *dataplane.Dataplane) (n uint64) {
	for _, q := range dp.Stats() {
		if q.Name == "p0" || q.Name == "p1" {
			n += q.RxPackets
		}
	}
	return n
}

// frameTag returns a test frame's tag: its UDP source port less tagPort, or the tag a
// non-IP test frame carries; for an ICMP error, the tag of the frame it quotes.
func frameTag(f []byte) (uint16, bool) {
	if len(f) < 16 {
		return 0, false
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x88b5:
		return binary.BigEndian.Uint16(f[14:]), true
	case etherIPv4:
		h := f[14:]
		ihl := int(h[0]&0xf) * 4
		if len(h) < ihl+8 {
			return 0, false
		}
		switch h[9] {
		case 17:
			return udpTag(h[ihl:])
		case 1: // ICMP: type, code, checksum, 4 bytes, then the quoted header
			q := h[ihl+8:]
			if len(q) < ipv4Header {
				return 0, false
			}
			qihl := int(q[0]&0xf) * 4
			if len(q) < qihl+2 {
				return 0, false
			}
			return udpTag(q[qihl:])
		}
	case etherIPv6:
		if len(f) < 14+ipv6Header+8 {
			return 0, false
		}
		switch h := f[14:]; h[6] {
		case 17:
			return udpTag(h[ipv6Header:])
		case 58:
			if q := h[ipv6Header+8:]; len(q) >= ipv6Header+2 && q[6] == 17 {
				return udpTag(q[ipv6Header:])
			}
		}
	}
	return 0, false
}

func udpTag(u []byte) (uint16, bool) {
	if len(u) < 2 || binary.BigEndian.Uint16(u) < tagPort {
		return 0, false
	}
	return binary.BigEndian.Uint16(u) - tagPort, true
}

// isICMPError reports whether f is an ICMP or ICMPv6 message (the kernel's errors).
func isICMPError(f []byte) bool {
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherIPv4:
		return f[14+9] == 1
	case etherIPv6:
		return f[14+6] == 58
	}
	return false
}

// icmpsFor counts the ICMP errors of type typ quoting frame tag that came back out of
// end (0: the kernel's port 0, g0; 2: uiod's, g2). mu, if not nil, is held while reading
// seen.
func icmpsFor(seen [][][]byte, mu *sync.Mutex, end int, tag uint16, typ byte) (n int) {
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	for _, f := range seen[end] {
		if icmpType(f, tag) == int(typ) {
			n++
		}
	}
	return n
}

// icmpType is the type of f if it is an ICMP error quoting frame tag, else -1.
func icmpType(f []byte, tag uint16) int {
	if !isICMPError(f) {
		return -1
	}
	off := 14 + ipv6Header
	if binary.BigEndian.Uint16(f[12:]) == etherIPv4 {
		off = 14 + int(f[14]&0xf)*4
	}
	if tg, ok := frameTag(f); ok && tg == tag && len(f) > off {
		return int(f[off])
	}
	return -1
}

// icmpOf is the first ICMP error of type typ quoting tag out of end.
func icmpOf(seen [][][]byte, end int, tag uint16, typ byte) []byte {
	for _, f := range seen[end] {
		if icmpType(f, tag) == int(typ) {
			return f
		}
	}
	return nil
}

// compareICMP checks that uiod's kernel path sent the error the reference kernel sent:
// the same bytes but for the IPv4 identification and header checksum, which each
// namespace's kernel picks.
func compareICMP(t *testing.T, name string, k, u []byte) {
	t.Helper()
	k, u = bytes.Clone(k), bytes.Clone(u)
	if binary.BigEndian.Uint16(k[12:]) == etherIPv4 && len(k) >= 34 && len(u) >= 34 {
		for _, f := range [][]byte{k, u} {
			copy(f[14+4:], []byte{0, 0})
			copy(f[14+ipv4Check:], []byte{0, 0})
		}
	}
	if !bytes.Equal(k, u) {
		t.Errorf("%s: the ICMP errors differ\nkernel % x\n  uiod % x", name, k, u)
	}
}
