package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
)

// bird runs a BIRD 2 instance in namespace ns with the configuration conf until the test
// ends, and returns its control socket.
func bird(t *testing.T, ns, name, conf string) string {
	t.Helper()
	dir := t.TempDir()
	cfg, sock := filepath.Join(dir, name+".conf"), filepath.Join(dir, name+".ctl")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd := exec.Command("ip", "netns", "exec", ns, "bird", "-f", "-c", cfg, "-s", sock, "-P", filepath.Join(dir, name+".pid"))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("bird in %s: %v", ns, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("bird %s: %s", name, log.String())
		}
	})
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }, "bird %s has no control socket", name)
	return sock
}

// birdc runs a BIRD command on the instance of control socket sock, in namespace ns.
func birdc(t *testing.T, ns, sock string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "birdc", "-s", sock}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("birdc %v: %v: %s", args, err, out)
	}
	return string(out)
}

// birdTimers keep a session's set-up and retries short.
const birdTimers = "hold time 9; keepalive time 3; connect delay time 1; connect retry time 1; error wait time 1, 2;"

// TestIntegrationRoutesFromBIRD: a routing daemon nobody here wrote programs uiod. BIRD in
// the router's namespace holds an eBGP session to BIRD in nsB, across uiod (the session is
// TCP to the router's address on port b's TAP: l3fwd hands it to the kernel as control
// traffic); nsB announces 10.233.0.0/24, the router's BIRD installs it in the kernel's main
// table by port b's TAP, and uiod forwards nsA's pings to it by its fast path; when nsB
// withdraws it, uiod stops (no route, to the kernel, which has none either).
func TestIntegrationRoutesFromBIRD(t *testing.T) {
	if _, err := exec.LookPath("bird"); err != nil {
		t.Skip("needs bird (Debian's bird2: scripts/routing-setup.sh)")
	}
	r := newFIBRig(t)
	router := bird(t, r.ns, "router", fmt.Sprintf(`
router id 10.232.0.1;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; }
protocol bgp peer {
	local 10.232.0.1 as 65001;
	neighbor 10.232.0.2 as 65002;
	%s
	ipv4 { import all; export none; };
}
`, birdTimers))
	peer := bird(t, r.nsB, "peer", fmt.Sprintf(`
router id 10.232.0.2;
protocol device { scan time 1; }
protocol static announced { ipv4; route 10.233.0.0/24 blackhole; }
protocol bgp peer {
	local 10.232.0.2 as 65002;
	neighbor 10.232.0.1 as 65001;
	%s
	ipv4 { import none; export where proto = "announced"; };
}
`, birdTimers))
	testutil.Eventually(t, 60*time.Second, func() bool { return r.route("10.233.0.0/24") != "" && r.route("10.233.0.0/24") != "pending" },
		"the BGP route never reached uiod: kernel %q", testutil.IPIn(t, r.ns, "route", "show", "proto", "bird"))
	// The first exchange resolves neighbours on the way (nsA's, in the router's kernel)
	// and BIRD may still be settling the route: a few tries, each logged.
	for try := 1; ping(t, r.nsA, "-c", "1", "-W", "5", "10.233.0.1") != 1; try++ {
		t.Logf("first ping over the BGP route, try %d: no reply (kernel: %q, uiod: %q)", try,
			testutil.IPIn(t, r.ns, "route", "show", "10.233.0.0/24"), r.route("10.233.0.0/24"))
		if try == 3 {
			t.Fatal("no reply to three pings over the BGP route")
		}
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return r.route("10.233.0.0/24") == "forward" },
		"the BGP route's next hop never resolved: %+v", r.d.fibStatus().RouteList)
	before := r.forwarded(t)
	n := ping(t, r.nsA, "-c", "20", "-i", "0.01", "-W", "5", "10.233.0.1")
	if n == 0 {
		t.Fatal("no reply over the BGP route")
	}
	if got := r.forwarded(t) - before; got < uint64(n) {
		t.Errorf("uiod forwarded %d frames from port a for %d replies over the BGP route", got, n)
	}

	start := time.Now()
	birdc(t, r.nsB, peer, "disable", "announced")
	testutil.Eventually(t, 30*time.Second, func() bool { return r.route("10.233.0.0/24") == "" },
		"the withdrawn route is still in uiod's table: kernel %q", testutil.IPIn(t, r.ns, "route", "show", "proto", "bird"))
	withdrawn := time.Since(start)
	before, noRoute := r.forwarded(t), r.notForwarded("no_route")
	if n := ping(t, r.nsA, "-c", "3", "-i", "0.1", "-W", "1", "10.233.0.1"); n != 0 {
		t.Errorf("after the withdrawal: %d replies", n)
	}
	if got := r.forwarded(t) - before; got != 0 {
		t.Errorf("after the withdrawal: uiod forwarded %d frames from port a", got)
	}
	if r.notForwarded("no_route") == noRoute {
		t.Error("after the withdrawal: no frame went to the kernel as no_route")
	}
	// The session runs on: only the route went.
	if s := birdc(t, r.ns, router, "show", "protocols", "peer"); !strings.Contains(s, "Established") {
		t.Errorf("the router's BGP session after the withdrawal: %s", s)
	}
	t.Logf("withdrawal to uiod's table: %v", withdrawn.Round(time.Millisecond))
}

// TestIntegrationBIRDSurvivesJunk: the BGP session across uiod stays up while nsB floods
// port b with TTL-1 frames through the router (each one the kernel's to answer, error
// class): the policer hands the kernel its error budget and drops the rest as policed,
// and the session's keepalives, control class, keep theirs. Hold time 3 s, flood 8 s of
// about 100 000 frames a second, 100 times the error class's rate: paced, so that the
// flood's own sender does not take the CPU BIRD needs on a 2-core machine (unpaced, its
// spin alone let BIRD's hold timer expire in one CI run).
func TestIntegrationBIRDSurvivesJunk(t *testing.T) {
	if testing.Short() {
		// Under make's -short -race run the poll thread is several times slower, and a
		// port whose ring overflows loses keepalives before any policer sees them.
		t.Skip("a flood against a 3 s hold time: not with -short")
	}
	if _, err := exec.LookPath("bird"); err != nil {
		t.Skip("needs bird (Debian's bird2: scripts/routing-setup.sh)")
	}
	r := newFIBRig(t)
	timers := "hold time 3; keepalive time 1; connect delay time 1; connect retry time 1; error wait time 1, 2;"
	router := bird(t, r.ns, "router", fmt.Sprintf(`
router id 10.232.0.1;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; }
protocol bgp peer { local 10.232.0.1 as 65001; neighbor 10.232.0.2 as 65002; %s ipv4 { import all; export none; }; }
`, timers))
	bird(t, r.nsB, "peer", fmt.Sprintf(`
router id 10.232.0.2;
protocol device { scan time 1; }
protocol static announced { ipv4; route 10.233.0.0/24 blackhole; }
protocol bgp peer { local 10.232.0.2 as 65002; neighbor 10.232.0.1 as 65001; %s ipv4 { import none; export where proto = "announced"; }; }
`, timers))
	testutil.Eventually(t, 60*time.Second, func() bool { return r.route("10.233.0.0/24") == "forward" },
		"the BGP route never reached uiod: kernel %q", testutil.IPIn(t, r.ns, "route", "show", "proto", "bird"))
	before := birdSession(t, birdc(t, r.ns, router, "show", "protocols", "peer"))
	if !strings.Contains(before.state, "Established") {
		t.Fatalf("session before the flood: %q", before.state)
	}

	macB := r.d.ports[1].nic.MAC()
	policed := func() uint64 { return r.d.router.Load().Stats().Classes[2].Policed }
	p0 := policed()
	var sent int
	err := testutil.InNetns(r.nsB, func() error {
		ifi, err := net.InterfaceByName("uiodp1")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(sa.Addr[:], macB)
		end := time.Now().Add(8 * time.Second)
		for i := 0; time.Now().Before(end); i++ {
			f := ipv4Frame(net.ParseIP("10.231.0.2"), 1, uint32(i))
			copy(f, macB)
			copy(f[6:12], ifi.HardwareAddr)
			if err := unix.Sendto(fd, f, 0, sa); err == nil {
				sent++
			} else if !errors.Is(err, unix.ENOBUFS) {
				return err
			}
			if i%1000 == 999 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("flood: %v", err)
	}
	after := birdSession(t, birdc(t, r.ns, router, "show", "protocols", "peer"))
	t.Logf("%d TTL-1 frames sent in 8 s, %d policed; session %q before, %q after", sent, policed()-p0, before.raw, after.raw)
	if !before.same(after) {
		t.Errorf("the BGP session did not survive the flood: %q before, %q after", before.raw, after.raw)
	}
	if policed() == p0 {
		t.Error("nothing was policed: the flood did not reach the policer")
	}
	if r.route("10.233.0.0/24") != "forward" {
		t.Errorf("the BGP route after the flood: %q", r.route("10.233.0.0/24"))
	}
}

// birdPeer is the "peer" protocol's line of `birdc show protocols`: its state and info
// ("up", "Established") and since when.
type birdPeer struct {
	raw, state string
	since      string
}

// birdSession reads the peer protocol's line from birdc's output.
func birdSession(t *testing.T, out string) birdPeer {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 6 && f[0] == "peer" {
			return birdPeer{raw: strings.Join(f[3:], " "), state: f[3] + " " + strings.Join(f[5:], " "), since: f[4]}
		}
	}
	t.Fatalf("no peer protocol in birdc's output:\n%s", out)
	return birdPeer{}
}

// same reports whether q is the same session as p: the same state, and a since time
// within half a second. BIRD keeps the since time on its monotonic clock and shows it on
// the wall clock, so two readings of one session can differ by a millisecond; a session
// that went down and came back is at least its hold time (3 s) later.
func (p birdPeer) same(q birdPeer) bool {
	if p.state != q.state {
		return false
	}
	for _, layout := range []string{"15:04:05.000", "15:04:05"} {
		a, errA := time.Parse(layout, p.since)
		b, errB := time.Parse(layout, q.since)
		if errA == nil && errB == nil {
			d := b.Sub(a)
			return d > -500*time.Millisecond && d < 500*time.Millisecond
		}
	}
	return p.since == q.since
}

// TestBirdSessionSame: one session read twice a millisecond apart is the same; one that
// came back, or is in another state, is not.
func TestBirdSessionSame(t *testing.T) {
	read := func(line string) birdPeer { return birdSession(t, "Name Proto Table State Since Info\n"+line+"\n") }
	up := read("peer       BGP        ---        up     14:20:01.123  Established")
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"peer       BGP        ---        up     14:20:01.123  Established", true},
		{"peer       BGP        ---        up     14:20:01.124  Established", true},
		{"peer       BGP        ---        up     14:20:06.400  Established", false},
		{"peer       BGP        ---        start  14:20:01.123  Active        Socket: Connection refused", false},
	} {
		if got := up.same(read(tt.line)); got != tt.want {
			t.Errorf("same(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
