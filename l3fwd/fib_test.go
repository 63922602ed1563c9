package l3fwd

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd/lpm"
)

// outcome is what Forward did with a frame to one destination: the port and next-hop
// MAC, or the reason it did not forward.
type outcome struct {
	port   dataplane.PortID
	mac    string
	reason string
}

func forwardTo(t *testing.T, a *App, dst netip.Addr) outcome {
	t.Helper()
	src := src4
	if dst.Is6() {
		src = src6
	}
	f := frame{dst: macP0, src: macSrc, from: src, to: dst, ttl: 64}.build()
	p, _, r, ok := a.Forward(0, f)
	if !ok {
		return outcome{reason: r.String()}
	}
	return outcome{port: p, mac: net.HardwareAddr(f[:6]).String()}
}

func TestUpdate(t *testing.T) {
	static := []Route{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: macNH1}}
	fwd := func(p dataplane.PortID, m net.HardwareAddr) outcome { return outcome{port: p, mac: m.String()} }
	for _, tc := range []struct {
		name   string
		routes []Route
		local  []netip.Prefix
		want   map[string]outcome
		stats  FIBStats // the counts only
	}{
		{
			name: "empty", want: map[string]outcome{
				"10.1.2.3": fwd(1, macNH1), "10.9.0.1": {reason: "no_route"}, "2001:db8::1": {reason: "no_route"},
			},
			stats: FIBStats{Static: 1},
		},
		{
			name: "routes",
			routes: []Route{
				{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 0, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 1, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("2001:db8::/32"), Port: 1, NextHopMAC: macNH1},
			},
			want: map[string]outcome{
				"10.2.0.9": fwd(0, macNH2), "10.9.0.1": fwd(1, macNH2), "10.1.0.1": fwd(1, macNH1),
				"2001:db8::1": fwd(1, macNH1), "2001:db9::1": {reason: "no_route"},
			},
			stats: FIBStats{Static: 1, Dynamic: 3},
		},
		{
			name: "unresolved",
			routes: []Route{
				{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Unresolved: true},
				{Prefix: netip.MustParsePrefix("10.2.3.4/32"), Port: 0, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("2001:db8::/32"), Unresolved: true},
			},
			want: map[string]outcome{
				"10.2.0.9": {reason: "unresolved"}, "10.2.3.4": fwd(0, macNH2), "2001:db8::1": {reason: "unresolved"},
			},
			stats: FIBStats{Static: 1, Dynamic: 3, Unresolved: 2},
		},
		{
			name: "static wins",
			routes: []Route{
				{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 0, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("10.1.5.0/24"), Port: 0, NextHopMAC: macNH2},
			},
			want:  map[string]outcome{"10.1.2.3": fwd(1, macNH1), "10.1.5.1": fwd(0, macNH2)},
			stats: FIBStats{Static: 1, Dynamic: 1, Shadowed: 1},
		},
		{
			name:   "local",
			routes: []Route{{Prefix: netip.MustParsePrefix("10.2.0.0/24"), Port: 0, NextHopMAC: macNH2}},
			local: []netip.Prefix{
				netip.MustParsePrefix("10.2.0.1/32"), netip.MustParsePrefix("10.2.0.255/32"),
				netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("fe80::1/128"),
				netip.MustParsePrefix("10.2.0.1/32"), // twice
			},
			want: map[string]outcome{
				"10.2.0.1": {reason: "local"}, "10.2.0.255": {reason: "local"}, "10.2.0.2": fwd(0, macNH2),
				"2001:db8::1": {reason: "local"},
			},
			stats: FIBStats{Static: 1, Dynamic: 1, Local: 4, Shadowed: 1},
		},
		{
			name: "refused",
			routes: []Route{
				{Prefix: netip.MustParsePrefix("fe80::/64"), Port: 0, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("224.0.0.0/4"), Port: 0, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("ff00::/8"), Unresolved: true},
				{Prefix: netip.MustParsePrefix("10.3.0.0/16"), Port: 7, NextHopMAC: macNH2},
				{Prefix: netip.MustParsePrefix("10.4.0.0/16"), Port: 0, NextHopMAC: net.HardwareAddr{1, 0, 0, 0, 0, 1}},
				{Prefix: netip.PrefixFrom(netip.MustParseAddr("10.5.0.1"), 16), Port: 0, NextHopMAC: macNH2},
			},
			local: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			want: map[string]outcome{
				"10.3.0.1": {reason: "no_route"}, "10.4.0.1": {reason: "no_route"}, "10.5.0.1": {reason: "no_route"},
			},
			stats: FIBStats{Static: 1, Refused: 7},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: static})
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Update(tc.routes, tc.local)
			if err != nil {
				t.Fatal(err)
			}
			if got.Generation != 2 || got.Updated.IsZero() || got.Memory == 0 {
				t.Errorf("generation %d, updated %v, memory %d: want 2, a time, some bytes", got.Generation, got.Updated, got.Memory)
			}
			counts := got
			counts.Generation, counts.Updated, counts.Memory = 0, time.Time{}, 0
			counts.Routes4, counts.Routes6, counts.Max4, counts.Max6, counts.Pages4 = 0, 0, 0, 0, lpm.PageInfo{} // TestRouteLimit's
			if counts != tc.stats {
				t.Errorf("stats %+v, want %+v", counts, tc.stats)
			}
			if a.FIB() != got {
				t.Errorf("FIB() %+v, want Update's %+v", a.FIB(), got)
			}
			for dst, want := range tc.want {
				if o := forwardTo(t, a, netip.MustParseAddr(dst)); o != want {
					t.Errorf("%s: %+v, want %+v", dst, o, want)
				}
			}
		})
	}
}

// TestUpdateReplaces: each Update replaces the dynamic routes of the one before, and the
// static ones stay.
func TestUpdateReplaces(t *testing.T) {
	a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: []Route{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: macNH1}}})
	if err != nil {
		t.Fatal(err)
	}
	r := []Route{{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 0, NextHopMAC: macNH2}}
	if _, err := a.Update(r, nil); err != nil {
		t.Fatal(err)
	}
	if o := forwardTo(t, a, netip.MustParseAddr("10.2.0.1")); o.reason != "" || o.port != 0 {
		t.Fatalf("after the add: %+v", o)
	}
	s, err := a.Update(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Generation != 3 || s.Dynamic != 0 {
		t.Errorf("after the delete: generation %d, %d dynamic routes: want 3, 0", s.Generation, s.Dynamic)
	}
	if o := forwardTo(t, a, netip.MustParseAddr("10.2.0.1")); o.reason != "no_route" {
		t.Errorf("after the delete: %+v, want no_route", o)
	}
	if o := forwardTo(t, a, netip.MustParseAddr("10.1.0.1")); o.reason != "" || o.port != 1 {
		t.Errorf("static route after the delete: %+v", o)
	}
}

// TestUpdateWhileForwarding runs Process on one goroutine while another publishes
// tables that alternately route 10.2.0.0/16 to port 1 by NH1, to port 0 by NH2, or not
// at all: every frame forwarded must leave by one of the two pairs, whole (under -race
// this is also the proof that the threads take no lock and share nothing written).
func TestUpdateWhileForwarding(t *testing.T) {
	a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := netip.MustParsePrefix("10.2.0.0/16")
	tables := [][]Route{
		{{Prefix: p, Port: 1, NextHopMAC: macNH1}},
		{{Prefix: p, Port: 0, NextHopMAC: macNH2}},
		{{Prefix: p, Unresolved: true}},
		nil,
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := a.Update(tables[i%len(tables)], nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	tmpl := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.2.3.4"), ttl: 64}.build()
	seen := map[string]int{}
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < 2000 || len(seen) < 4; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("in a minute, the frames saw only %v of the four tables", seen)
		}
		f := bytes.Clone(tmpl)
		port, _, r, ok := a.Forward(0, f)
		switch {
		case !ok:
			seen[r.String()]++
		case port == 1 && bytes.Equal(f[:6], macNH1) && bytes.Equal(f[6:12], macP1):
			seen["port 1"]++
		case port == 0 && bytes.Equal(f[:6], macNH2) && bytes.Equal(f[6:12], macP0):
			seen["port 0"]++
		default:
			t.Fatalf("frame %d forwarded to port %d with MACs %x: no table had that", i, port, f[:12])
		}
	}
	stop.Store(true)
	wg.Wait()
	for k := range seen {
		switch k {
		case "port 0", "port 1", "unresolved", "no_route":
		default:
			t.Errorf("frames not forwarded for %s: %d", k, seen[k])
		}
	}
	t.Logf("outcomes: %v, generation %d", seen, a.FIB().Generation)
}

// TestProcessAllocsAfterUpdate: the fast path allocates nothing with an updated table.
func TestProcessAllocsAfterUpdate(t *testing.T) {
	a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Update([]Route{{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 1, NextHopMAC: macNH1}}, nil); err != nil {
		t.Fatal(err)
	}
	tmpl := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.2.3.4"), ttl: 64}.build()
	f := make([]byte, len(tmpl))
	n := testing.AllocsPerRun(100, func() {
		copy(f, tmpl)
		if _, _, _, ok := a.Forward(0, f); !ok {
			t.Fatal("not forwarded")
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per frame", n)
	}
}

// BenchmarkUpdate is the cost of publishing a table of n dynamic routes (/32s in 10/8)
// that differs from the one in force by one route of each family added or removed: the
// diff, and the copies of the tables it changes.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{0, 1000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}})
			if err != nil {
				b.Fatal(err)
			}
			routes := make([]Route, n, n+2)
			for i := range routes {
				routes[i] = Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32), Port: 1, NextHopMAC: macNH1}
			}
			more := append(routes, Route{Prefix: netip.MustParsePrefix("192.0.2.0/24"), Port: 0, NextHopMAC: macNH2},
				Route{Prefix: netip.MustParsePrefix("2001:db8::/32"), Port: 0, NextHopMAC: macNH2})
			if _, err := a.Update(routes, nil); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				set := routes
				if i++; i%2 == 1 {
					set = more
				}
				if _, err := a.Update(set, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRouteLimit: static entries over MaxRoutes4/6 are New's error naming the prefix
// and the limit; Update over a limit leaves the new entries out and counts them
// (OverLimit, FirstOverLimit), keeps the entries in force first, forwards by what fits,
// and takes the rest when room is made.
func TestRouteLimit(t *testing.T) {
	p := netip.MustParsePrefix
	r := func(s string) Route { return Route{Prefix: p(s), Port: 1, NextHopMAC: macNH1} }
	if _, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: []Route{r("10.1.0.0/16"), r("10.2.0.0/16")}, MaxRoutes4: 1}); err == nil ||
		!strings.Contains(err.Error(), "10.2.0.0/16") || !strings.Contains(err.Error(), "more than 1 IPv4") {
		t.Errorf("two static routes over a limit of 1: %v", err)
	}
	if _, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: []Route{r("2001:db8::/32")}, Local: []netip.Prefix{p("2001:db8:1::1/128")}, MaxRoutes6: 1}); err == nil ||
		!strings.Contains(err.Error(), "local 0") || !strings.Contains(err.Error(), "IPv6") {
		t.Errorf("a static route and a local prefix over an IPv6 limit of 1: %v", err)
	}
	a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}, Routes: []Route{r("10.1.0.0/16")}, MaxRoutes4: 3, MaxRoutes6: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f := a.FIB(); f.Routes4 != 1 || f.Max4 != 3 || f.Max6 != 1 {
		t.Fatalf("New: %+v", f)
	}
	st, err := a.Update([]Route{r("10.3.0.0/16"), r("2001:db8:3::/48")}, nil)
	if err != nil || st.OverLimit != 0 || st.Routes4 != 2 || st.Routes6 != 1 {
		t.Fatalf("under the limits: %+v %v", st, err)
	}
	// Three new IPv4 routes and one IPv6 for one place of each: the entries in force
	// stay, the first new one of each family that fits is taken, the rest refused.
	st, err = a.Update([]Route{r("10.4.0.0/16"), r("10.5.0.0/16"), r("2001:db8:4::/48"), r("10.3.0.0/16"), r("2001:db8:3::/48"), r("10.6.0.0/16")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.OverLimit != 3 || st.FirstOverLimit != p("10.5.0.0/16") || st.Routes4 != 3 || st.Routes6 != 1 || st.Dynamic != 3 {
		t.Errorf("over the limits: %+v", st)
	}
	want := map[string]outcome{
		"10.1.0.1": {port: 1, mac: macNH1.String()}, "10.3.0.1": {port: 1, mac: macNH1.String()},
		"10.4.0.1": {port: 1, mac: macNH1.String()}, "10.5.0.1": {reason: "no_route"}, "10.6.0.1": {reason: "no_route"},
		"2001:db8:3::1": {port: 1, mac: macNH1.String()}, "2001:db8:4::1": {reason: "no_route"},
	}
	for dst, w := range want {
		if o := forwardTo(t, a, netip.MustParseAddr(dst)); o != w {
			t.Errorf("%s: %+v, want %+v", dst, o, w)
		}
	}
	// The kernel withdraws 10.3/16: 10.5/16 now fits.
	st, err = a.Update([]Route{r("10.4.0.0/16"), r("10.5.0.0/16"), r("2001:db8:3::/48")}, nil)
	if err != nil || st.OverLimit != 0 || st.Routes4 != 3 {
		t.Fatalf("after a withdrawal: %+v %v", st, err)
	}
	if o := forwardTo(t, a, netip.MustParseAddr("10.5.0.1")); o.port != 1 {
		t.Errorf("10.5.0.1 after a withdrawal: %+v", o)
	}
}

// TestFIBPages: the generation says what pages its IPv4 first level lies on (what the
// daemon logs and /status shows): 4 KiB with the reason when THP is off, and an Update
// that copies the IPv4 table measures the copy.
func TestFIBPages(t *testing.T) {
	path := t.TempDir() + "/enabled"
	if err := os.WriteFile(path, []byte("always madvise [never]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := lpm.THPEnabledFile
	lpm.THPEnabledFile = path
	a, err := New(Config{Ports: []net.HardwareAddr{macP0, macP1}})
	lpm.THPEnabledFile = old
	if err != nil {
		t.Fatal(err)
	}
	if p := a.FIB().Pages4; p.Mode != lpm.PagesSmall || p.Reason != "transparent_hugepage is never" {
		t.Errorf("THP never: %+v", p)
	}
	// The next copy is made with THP as the machine has it.
	st, err := a.Update([]Route{{Prefix: netip.MustParsePrefix("10.3.0.0/16"), Port: 1, NextHopMAC: macNH1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mode := lpm.PagesSmall
	if b, err := os.ReadFile(old); err == nil && !strings.Contains(string(b), "[never]") {
		mode = lpm.PagesTHP
	}
	if st.Pages4.Mode != mode || (mode == lpm.PagesTHP && st.Pages4.HugeBytes < 0) {
		t.Errorf("after an IPv4 update: %+v, want mode %s", st.Pages4, mode)
	}
	// An IPv6-only update keeps the IPv4 table and its measure.
	st2, err := a.Update([]Route{{Prefix: netip.MustParsePrefix("10.3.0.0/16"), Port: 1, NextHopMAC: macNH1},
		{Prefix: netip.MustParsePrefix("2001:db8:3::/48"), Port: 1, NextHopMAC: macNH1}}, nil)
	if err != nil || st2.Pages4 != st.Pages4 {
		t.Errorf("after an IPv6 update: %+v %v, want %+v", st2.Pages4, err, st.Pages4)
	}
}
