package daemon

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// fibRig is a router whose routes come from the kernel: a daemon in namespace ns with
// ports a and b, each with a kernel path (uiodk0 holding 10.231.0.1/24, uiodk1
// 10.232.0.1/24), cabled by TAP wires to nsA (10.231.0.2, default route by port a) and
// nsB (10.232.0.2 and, on its loopback, 10.233.0.1 and 2001:db8:233::1: the prefixes the
// tests route to it). The kernel in ns forwards (what uiod sends it, unresolved, it
// forwards and resolves); it has no route to 10.233.0.0/24 until a test adds one.
type fibRig struct {
	d            *Daemon
	ns, nsA, nsB string
}

func newFIBRig(t *testing.T) *fibRig {
	t.Helper()
	needTUN(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	r := &fibRig{ns: testutil.Netns(t, "uiod-f"), nsA: testutil.Netns(t, "uiod-fa"), nsB: testutil.Netns(t, "uiod-fb")}
	for _, ns := range []string{r.ns, r.nsA, r.nsB} {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
			"net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0").CombinedOutput(); err != nil {
			t.Fatalf("sysctl in %s: %v: %s", ns, err, out)
		}
	}
	cfg := testConfig(t, `
ports:
  - {name: a, driver: sim, wire: "tap:uiodp0", promiscuous: true, kernel: {tap: uiodk0}}
  - {name: b, driver: sim, wire: "tap:uiodp1", promiscuous: true, kernel: {tap: uiodk1}}
forward: {mode: l3fwd, routes_from: kernel}
poll: {mode: adaptive, idle_threshold: 300us, wait_timeout: 10ms}
`)
	r.d, _ = startIn(t, cfg, r.ns, nil)
	testutil.IPIn(t, r.ns, "addr", "add", "10.231.0.1/24", "dev", "uiodk0")
	testutil.IPIn(t, r.ns, "addr", "add", "10.232.0.1/24", "dev", "uiodk1")
	testutil.IPIn(t, r.ns, "addr", "add", "2001:db8:232::1/64", "dev", "uiodk1", "nodad")
	testutil.IPIn(t, r.ns, "addr", "add", "2001:db8:231::1/64", "dev", "uiodk0", "nodad")
	for i, peer := range []string{r.nsA, r.nsB} {
		w := fmt.Sprintf("uiodp%d", i)
		testutil.IPIn(t, r.ns, "link", "set", w, "netns", peer)
		testutil.IPIn(t, peer, "link", "set", w, "up")
		testutil.IPIn(t, peer, "link", "set", "lo", "up")
	}
	testutil.IPIn(t, r.nsA, "addr", "add", "10.231.0.2/24", "dev", "uiodp0")
	testutil.IPIn(t, r.nsA, "addr", "add", "2001:db8:231::2/64", "dev", "uiodp0", "nodad")
	testutil.IPIn(t, r.nsA, "route", "add", "default", "via", "10.231.0.1")
	testutil.IPIn(t, r.nsA, "route", "add", "default", "via", "2001:db8:231::1")
	testutil.IPIn(t, r.nsB, "addr", "add", "10.232.0.2/24", "dev", "uiodp1")
	testutil.IPIn(t, r.nsB, "addr", "add", "2001:db8:232::2/64", "dev", "uiodp1", "nodad")
	testutil.IPIn(t, r.nsB, "addr", "add", "10.233.0.1/32", "dev", "lo")
	testutil.IPIn(t, r.nsB, "addr", "add", "2001:db8:233::1/128", "dev", "lo")
	testutil.IPIn(t, r.nsB, "route", "add", "default", "via", "10.232.0.1")
	testutil.IPIn(t, r.nsB, "route", "add", "default", "via", "2001:db8:232::1")
	return r
}

// route is the kind of the kernel route for prefix in /status ("" for none), "pending"
// while the watcher has changes the table in force does not have yet.
func (r *fibRig) route(prefix string) string {
	st := r.d.fibStatus()
	if st.Pending {
		return "pending"
	}
	for _, fr := range st.RouteList {
		if fr.Prefix == prefix {
			return fr.Kind
		}
	}
	return ""
}

// forwarded is what port a's RX queue sent on (l3fwd's fast and slow path forwarding:
// never the kernel's, which leaves by the TAPs).
func (r *fibRig) forwarded(t *testing.T) uint64 {
	t.Helper()
	q := queueStats(r.d, "a/rx0")
	if q.Name == "" {
		t.Fatal("no queue a/rx0")
	}
	return q.TxPackets
}

func (r *fibRig) notForwarded(reason string) uint64 {
	return r.d.router.Load().Stats().NotForwarded[reason]
}

// kernelForwarded is the kernel's count of the IPv4 datagrams it forwarded in ns.
func (r *fibRig) kernelForwarded(t *testing.T) uint64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", r.ns, "cat", "/proc/net/snmp").Output()
	if err != nil {
		t.Fatalf("/proc/net/snmp in %s: %v", r.ns, err)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "ForwDatagrams" && i < len(f) {
				v, _ := strconv.ParseUint(f[i], 10, 64)
				return v
			}
		}
	}
	t.Fatalf("no Ip: ForwDatagrams in %s's /proc/net/snmp", r.ns)
	return 0
}

// TestIntegrationRoutesFromKernel: `ip route add` in the router's namespace makes uiod
// forward to the new prefix by its fast path (the first frame, its next hop unresolved,
// through the kernel, which resolves it), and `ip route del` makes it stop: the frames
// then go to the kernel as no_route, which has no route either. IPv4 and IPv6.
func TestIntegrationRoutesFromKernel(t *testing.T) {
	r := newFIBRig(t)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return r.route("10.231.0.0/24") == "on-link" && r.route("10.231.0.1/32") == "local" && r.route("10.232.0.255/32") == "local"
	}, "/status has no on-link route for port a's subnet, or not the TAPs' addresses: %+v", r.d.fibStatus().RouteList)
	if n := ping(t, r.nsA, "-c", "1", "-W", "2", "10.233.0.1"); n != 0 {
		t.Fatalf("before the route: %d replies from 10.233.0.1", n)
	}

	for _, c := range []struct{ name, prefix, dst, via string }{
		{"ipv4", "10.233.0.0/24", "10.233.0.1", "10.232.0.2"},
		{"ipv6", "2001:db8:233::/48", "2001:db8:233::1", "2001:db8:232::2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.IPIn(t, r.ns, "route", "add", c.prefix, "via", c.via)
			want := "unresolved" // ns has not heard from nsB: its neighbour is unknown
			if testutil.IPIn(t, r.ns, "neigh", "show", c.via, "dev", "uiodk1") != "" {
				want = "" // either
			}
			testutil.Eventually(t, 10*time.Second, func() bool {
				k := r.route(c.prefix)
				return k == "forward" || k == "unresolved" && want == "unresolved"
			}, "no route %s in /status after ip route add: %+v", c.prefix, r.d.fibStatus().RouteList)
			// The first frames go to the kernel (unresolved), which resolves nsB; then the
			// fast path takes them.
			unresolved := r.notForwarded("unresolved")
			if n := ping(t, r.nsA, "-c", "1", "-W", "5", c.dst); n != 1 {
				t.Fatalf("first ping to %s: %d replies", c.dst, n)
			}
			if r.route(c.prefix) == "unresolved" && r.notForwarded("unresolved") == unresolved {
				t.Errorf("the route was unresolved, yet no frame went to the kernel as unresolved")
			}
			testutil.Eventually(t, 10*time.Second, func() bool { return r.route(c.prefix) == "forward" },
				"route %s not resolved after the kernel resolved its gateway: %+v", c.prefix, r.d.fibStatus().RouteList)

			before, kernel := r.forwarded(t), r.kernelForwarded(t)
			n := ping(t, r.nsA, "-c", "20", "-i", "0.01", "-W", "5", c.dst)
			if n == 0 {
				t.Fatalf("no reply from %s over the kernel's route", c.dst)
			}
			// With the route resolved, every echo request nsA sends takes uiod's fast path
			// (the table decides it: no timing) and the kernel forwards none of them.
			if got := r.forwarded(t) - before; got < uint64(n) {
				t.Errorf("uiod forwarded %d frames from port a for %d replies (not forwarded: %v; a/rx0 %+v; FIB %+v)", got, n, r.d.router.Load().Stats().NotForwarded, queueStats(r.d, "a/rx0"), *r.d.fibStatus())
			}
			if c.name == "ipv4" {
				if got := r.kernelForwarded(t) - kernel; got != 0 {
					t.Errorf("the kernel forwarded %d datagrams with the route resolved", got)
				}
			}

			testutil.IPIn(t, r.ns, "route", "del", c.prefix, "via", c.via)
			testutil.Eventually(t, 10*time.Second, func() bool { return r.route(c.prefix) == "" },
				"route %s still in /status after ip route del", c.prefix)
			before, noRoute := r.forwarded(t), r.notForwarded("no_route")
			if n := ping(t, r.nsA, "-c", "3", "-i", "0.1", "-W", "1", c.dst); n != 0 {
				t.Errorf("after ip route del: %d replies from %s", n, c.dst)
			}
			if got := r.forwarded(t) - before; got != 0 {
				t.Errorf("after ip route del: uiod forwarded %d frames from port a", got)
			}
			if r.notForwarded("no_route") == noRoute {
				t.Errorf("after ip route del: no frame to the kernel as no_route")
			}
		})
	}
	st := r.d.Status().FIB
	if st == nil || st.Source != "kernel" || st.Table != 254 || st.Generation < 3 || st.Updates == 0 || st.Events == 0 || len(st.Neighbours) == 0 {
		t.Errorf("/status FIB %+v: want the kernel's main table, updated, with neighbours", st)
	}
	t.Logf("FIB: generation %d, %d events, %d updates, %d routes, %d local, neighbours %+v", st.Generation, st.Events, st.Updates, st.Routes, st.Local, st.Neighbours)
}

// TestIntegrationRoutesFromKernelStatic: a static route is pinned over the kernel's
// route for the same prefix.
func TestIntegrationRoutesFromKernelStatic(t *testing.T) {
	needTUN(t)
	ns := testutil.Netns(t, "uiod-fs")
	d := startKernelRouter(t, ns, "fibs", `
  routes: [{prefix: 10.9.0.0/16, port: a, next_hop_mac: "02:00:00:00:09:01"}]`)
	testutil.IPIn(t, ns, "addr", "add", "10.232.0.1/24", "dev", "uiodk1")
	testutil.IPIn(t, ns, "route", "add", "10.9.0.0/16", "via", "10.232.0.2")
	testutil.IPIn(t, ns, "route", "add", "10.10.0.0/16", "via", "10.232.0.2")
	testutil.Eventually(t, 10*time.Second, func() bool {
		f := d.router.Load().FIB()
		return f.Shadowed == 1 && f.Dynamic >= 2 // 10.10/16 and 10.232.0/24
	}, "the kernel's 10.9.0.0/16 not shadowed by the static one: %+v", d.router.Load().FIB())
	app := d.router.Load()
	if st := app.FIB(); st.Static != 1 {
		t.Errorf("%d static routes, want 1", st.Static)
	}
	// The static route's next hop, not the kernel's (unresolved: to the kernel).
	macA := d.ports[0].nic.MAC()
	for _, c := range []struct {
		dst    string
		port   int
		mac    string
		reason string
	}{
		{dst: "10.9.1.1", port: 0, mac: "02:00:00:00:09:01"},
		{dst: "10.10.1.1", reason: "unresolved"},
		{dst: "10.11.1.1", reason: "no_route"},
	} {
		f := ipv4Frame(net.ParseIP(c.dst), 64, 1)
		copy(f, macA)
		port, _, reason, ok := app.Forward(0, f)
		switch {
		case c.reason != "" && (ok || reason.String() != c.reason):
			t.Errorf("%s: forwarded %v (port %d), reason %v: want %s", c.dst, ok, port, reason, c.reason)
		case c.reason == "" && (!ok || int(port) != c.port || net.HardwareAddr(f[:6]).String() != c.mac):
			t.Errorf("%s: forwarded %v to port %d, MAC %v (reason %v): want port %d, MAC %s", c.dst, ok, port, net.HardwareAddr(f[:6]), reason, c.port, c.mac)
		}
	}
}

// churnRoutes is how many routes TestIntegrationRouteChurn adds and removes (the
// environment's UIOD_CHURN_ROUTES raises it, for BENCHMARKS.md's numbers).
func churnRoutes() int {
	if n, err := strconv.Atoi(os.Getenv("UIOD_CHURN_ROUTES")); err == nil && n > 0 && n <= 1<<16*4 {
		return n
	}
	return 10000
}

// churnPrefix is churn route i: a /32 in 10.240.0.0/14, by nsB (port b) when i is even
// and by nsA (port a) when odd.
func churnPrefix(i int) (string, string) {
	via := "10.232.0.2"
	if i%2 == 1 {
		via = "10.231.0.2"
	}
	return fmt.Sprintf("10.%d.%d.%d/32", 240+i>>16, i>>8&0xff, i&0xff), via
}

// TestIntegrationRouteChurn adds churnRoutes() routes to the kernel in one batch and then
// removes them, while nsA pings through uiod and the test looks destinations up in the
// daemon's l3fwd all along: no frame is ever forwarded to a port or MAC that is not its
// route's (even routes by port b to nsB, odd by port a to nsA), the table converges to
// every route and back, and it logs the convergence times and the ping's answers.
func TestIntegrationRouteChurn(t *testing.T) {
	r := newFIBRig(t)
	n := churnRoutes()
	testutil.IPIn(t, r.ns, "route", "add", "10.233.0.0/24", "via", "10.232.0.2")
	// Both gateways resolved: the routes take the fast path as soon as they are in.
	if got := ping(t, r.nsA, "-c", "2", "-i", "0.2", "-W", "5", "10.233.0.1"); got == 0 {
		t.Fatal("no reply from 10.233.0.1 before the churn")
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return r.route("10.233.0.0/24") == "forward" }, "10.233.0.0/24 not resolved")
	base := r.d.router.Load().FIB().Dynamic
	idle, _ := exec.Command("ip", "netns", "exec", r.nsA, "ping", "-q", "-c", "200", "-i", "0.002", "-W", "1", "10.233.0.1").CombinedOutput()
	t.Logf("ping through uiod before the churn: %s", strings.TrimSpace(string(idle[max(0, strings.Index(string(idle), "---")):])))
	macs := map[int]string{}
	for _, fn := range []struct{ ns, dev string }{{r.nsA, "uiodp0"}, {r.nsB, "uiodp1"}} {
		l := testutil.IPIn(t, fn.ns, "-br", "link", "show", "dev", fn.dev)
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("ip link in %s: %q", fn.ns, l)
		}
		macs[len(macs)] = f[2]
	}
	wantPort := func(i int) (int, string) {
		if i%2 == 1 {
			return 0, macs[0] // port a, nsA
		}
		return 1, macs[1]
	}
	macA := r.d.ports[0].nic.MAC()
	app := r.d.router.Load()
	stop := make(chan struct{})
	checked := make(chan [3]int, 1)
	go func() { // look churned destinations up until stop: forwarded, unresolved, no route
		var c [3]int
		for i := 0; ; i = (i + 7919) % n {
			select {
			case <-stop:
				checked <- c
				return
			default:
			}
			if (c[0]+c[1]+c[2])%1000 == 999 {
				time.Sleep(time.Millisecond) // leave the 2-CPU machine to the poll thread and the watcher
			}
			p, _ := churnPrefix(i)
			f := ipv4Frame(net.ParseIP(strings.TrimSuffix(p, "/32")), 64, uint32(i))
			copy(f, macA)
			port, _, reason, ok := app.Forward(0, f)
			switch {
			case ok:
				wp, wm := wantPort(i)
				if int(port) != wp || net.HardwareAddr(f[:6]).String() != wm {
					t.Errorf("%s forwarded to port %d, MAC %v: its route is port %d, MAC %s", p, port, net.HardwareAddr(f[:6]), wp, wm)
				}
				c[0]++
			case reason.String() == "unresolved":
				c[1]++
			case reason.String() == "no_route":
				c[2]++
			default:
				t.Errorf("%s: not forwarded for %v", p, reason)
			}
		}
	}()
	// A ping stream through uiod for the whole churn, stopped (SIGINT: it prints its
	// statistics) when the churn is over.
	var pingOut strings.Builder
	pinger := exec.Command("ip", "netns", "exec", r.nsA, "ping", "-q", "-i", "0.002", "-w", "300", "-W", "1", "10.233.0.1")
	pinger.Stdout, pinger.Stderr = &pingOut, &pingOut
	if err := pinger.Start(); err != nil {
		t.Fatal(err)
	}
	batch := func(verb string) time.Duration {
		var b strings.Builder
		for i := range n {
			p, via := churnPrefix(i)
			fmt.Fprintf(&b, "route %s %s via %s\n", verb, p, via)
		}
		start := time.Now()
		cmd := exec.Command("ip", "-n", r.ns, "-batch", "-")
		cmd.Stdin = strings.NewReader(b.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ip -batch (%s): %v: %s", verb, err, out)
		}
		want := base
		if verb == "add" {
			want += n
		}
		testutil.Eventually(t, 120*time.Second, func() bool {
			f := app.FIB()
			return f.Dynamic == want && r.route("10.233.0.0/24") == "forward"
		}, "after route %s of %d routes: %d dynamic routes in force, want %d", verb, n, app.FIB().Dynamic, want)
		return time.Since(start)
	}
	addTime := batch("add")
	fibAdd := app.FIB()
	delTime := batch("del")
	close(stop)
	c := <-checked
	pinger.Process.Signal(os.Interrupt)
	pinger.Wait()
	out := pingOut.String()
	st := r.d.fibStatus()
	t.Logf("%d routes: added and in force in %v (%.0f routes/s; table %d bytes), removed in %v; %d lookups during the churn: %d forwarded to their route's port, %d unresolved, %d no route; %d events, %d tables published",
		n, addTime.Round(time.Millisecond), float64(n)/addTime.Seconds(), fibAdd.Memory, delTime.Round(time.Millisecond), c[0]+c[1]+c[2], c[0], c[1], c[2], st.Events, st.Updates)
	t.Logf("ping through uiod during the churn: %s", strings.TrimSpace(out[max(0, strings.Index(out, "---")):]))
	if c[0] == 0 {
		t.Error("no churned destination was ever forwarded: the routes never took")
	}
}

// startKernelRouter starts, in netns ns, a router with routes from the kernel on two sim
// ports a and b (wires pair:WIRE0 and pair:WIRE1) whose kernel paths are the TAPs uiodk0
// and uiodk1; forward is more of the forward section, each line indented by two.
func startKernelRouter(t *testing.T, ns, wire, forward string) *Daemon {
	t.Helper()
	cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", kernel: {tap: uiodk0}}
  - {name: b, driver: sim, wire: "pair:%[1]s1", kernel: {tap: uiodk1}}
forward:
  mode: l3fwd
  routes_from: kernel%[2]s
`, wire, forward))
	d, _ := startIn(t, cfg, ns, nil)
	return d
}
