package daemon

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic/tap"
	"github.com/uiod/uiod/wire"
)

// noKernel counts what kernelApp meant for a port without a kernel path.
var noKernel = dataplane.RegisterDropReason("test_no_kernel")

// kernelApp is the test's stand-in for l3fwd's slow path: it hands ARP and frames for the
// RX port's own MAC to the kernel and l2-forwards the rest to the queue's peer.
type kernelApp struct {
	macs atomic.Pointer[[][6]byte] // by PortID, set once the ports are open
}

func (a *kernelApp) Process(b *dataplane.Burst) {
	macs := *a.macs.Load()
	own := macs[b.Port]
	for i, f := range b.Frames {
		fb := f.Bytes()
		if len(fb) >= 14 && (binary.BigEndian.Uint16(fb[12:]) == 0x0806 || [6]byte(fb[0:6]) == own) {
			b.ToKernel(i, noKernel)
			continue
		}
		b.Send(i, b.Peer)
	}
}

// kernelRig is a daemon in namespace ns whose port a has the kernel path uiodk0 holding
// 10.231.0.1/24; a is cabled to namespace nsA (10.231.0.2) and port b to nsB, each by a
// TAP wire moved into the peer's namespace (a TAP, unlike a veth, hands its reader
// MTU-sized frames, not the peer's TSO super-frames). Under the test's kernelApp nsB is
// 10.231.0.3 on the same link and the two peers know each other's MAC; under l3fwd it is
// 10.232.0.2 behind port b, each peer's default route is port a's or b's address, and
// l3fwd routes between them. Either way the peers' traffic is forwarded by the app, and
// what nsA sends the kernel's address (and its ARP) goes through the TAP.
type kernelRig struct {
	d            *Daemon
	ns, nsA, nsB string
	macPort      net.HardwareAddr // port a's, and so its TAP's
	peerB        string           // nsB's address
}

// The peers' addresses, set on their interfaces so that routes can name them.
var (
	macPeerA = net.HardwareAddr{2, 0, 0, 0x23, 0x10, 0x0a}
	macPeerB = net.HardwareAddr{2, 0, 0, 0x23, 0x10, 0x0b}
)

func newKernelRig(t *testing.T, poll string, l3 bool) *kernelRig {
	t.Helper()
	needTUN(t)
	for _, tool := range []string{"ping", "nc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (iputils-ping, netcat-openbsd)", tool)
		}
	}
	r := &kernelRig{ns: testutil.Netns(t, "uiod-k"), nsA: testutil.Netns(t, "uiod-ka"), nsB: testutil.Netns(t, "uiod-kb"), peerB: "10.231.0.3"}
	for _, ns := range []string{r.ns, r.nsA, r.nsB} {
		// No IPv6: nothing but the test's own traffic crosses the ports.
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1").CombinedOutput(); err != nil {
			t.Fatalf("sysctl in %s: %v: %s", ns, err, out)
		}
	}
	forward := "{mode: l2fwd, pairs: [[a, b]]}"
	if l3 {
		r.peerB = "10.232.0.2"
		forward = fmt.Sprintf(`
  mode: l3fwd
  local: [10.231.0.1]
  routes:
    - {prefix: 10.231.0.2/32, port: a, next_hop_mac: "%s"}
    - {prefix: 10.232.0.0/24, port: b, next_hop_mac: "%s"}`, macPeerA, macPeerB)
	}
	cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "tap:uiodp0", promiscuous: true, kernel: {tap: uiodk0}}
  - {name: b, driver: sim, wire: "tap:uiodp1", promiscuous: true}
forward: %s
poll: %s
`, forward, poll))
	var macs [][6]byte
	if l3 {
		r.d, macs = startIn(t, cfg, r.ns, nil)
	} else {
		r.d, macs = startKernelApp(t, cfg, r.ns)
	}
	r.macPort = r.d.ports[0].nic.MAC()
	testutil.IPIn(t, r.ns, "addr", "add", "10.231.0.1/24", "dev", "uiodk0")
	// The wires' TAPs, made by Start in ns, are the peers' interfaces.
	for i, peer := range []string{r.nsA, r.nsB} {
		w := fmt.Sprintf("uiodp%d", i)
		testutil.IPIn(t, r.ns, "link", "set", w, "netns", peer)
		testutil.IPIn(t, peer, "link", "set", w, "address", []net.HardwareAddr{macPeerA, macPeerB}[i].String())
		testutil.IPIn(t, peer, "link", "set", w, "up")
	}
	testutil.IPIn(t, r.nsA, "addr", "add", "10.231.0.2/24", "dev", "uiodp0")
	if l3 {
		testutil.IPIn(t, r.nsB, "addr", "add", "10.232.0.2/24", "dev", "uiodp1")
		testutil.IPIn(t, r.nsA, "route", "add", "default", "via", "10.231.0.1")
		testutil.IPIn(t, r.nsB, "route", "add", "default", "via", "10.232.0.1")
		// Port b has no kernel path to answer ARP for its address: nsB knows it.
		testutil.IPIn(t, r.nsB, "neigh", "add", "10.232.0.1", "lladdr", net.HardwareAddr(macs[1][:]).String(), "dev", "uiodp1")
		return r
	}
	testutil.IPIn(t, r.nsB, "addr", "add", "10.231.0.3/24", "dev", "uiodp1")
	testutil.IPIn(t, r.nsA, "neigh", "add", "10.231.0.3", "lladdr", macPeerB.String(), "dev", "uiodp0")
	testutil.IPIn(t, r.nsB, "neigh", "add", "10.231.0.2", "lladdr", macPeerA.String(), "dev", "uiodp1")
	return r
}

// startKernelApp starts a daemon for cfg in namespace ns running kernelApp (see startIn).
func startKernelApp(t testing.TB, cfg *config.Config, ns string) (*Daemon, [][6]byte) {
	t.Helper()
	app := &kernelApp{}
	empty := make([][6]byte, len(cfg.Ports))
	app.macs.Store(&empty)
	d, macs := startIn(t, cfg, ns, app)
	app.macs.Store(&macs)
	return d, macs
}

// startIn starts a daemon for cfg in namespace ns with app (nil: forward.mode's), stops
// it when the test ends, and returns it with its ports' MACs.
func startIn(t testing.TB, cfg *config.Config, ns string, app dataplane.App) (*Daemon, [][6]byte) {
	t.Helper()
	cfg.Metrics.Listen = "" // the daemon runs in ns: keep it off
	opts := Options{}
	if app != nil {
		opts.App = app
	}
	d := New(cfg, opts)
	if err := testutil.InNetns(ns, d.Start); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	macs := make([][6]byte, len(d.ports))
	for i, p := range d.ports {
		macs[i] = [6]byte(p.nic.MAC())
	}
	return d, macs
}

// pairKernelDaemon starts, in a new namespace, a daemon on two sim ports cabled to the
// in-memory wires pair:NAME0 and pair:NAME1, port a with the kernel path tapName, under
// the poll section poll, running kernelApp. open is called with NAME before the start (to
// open the wires' far ends).
func pairKernelDaemon(t testing.TB, tapName, poll string, open func(name string)) (d *Daemon, ns string, macs [][6]byte) {
	t.Helper()
	needTUN(t)
	ns = testutil.Netns(t, "uiod-"+tapName)
	name := fmt.Sprintf("%s-%d", tapName, os.Getpid())
	cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", promiscuous: true, kernel: {tap: %[2]s}}
  - {name: b, driver: sim, wire: "pair:%[1]s1", promiscuous: true}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: %[3]s
`, name, tapName, poll))
	open(name)
	d, macs = startKernelApp(t, cfg, ns)
	return d, ns, macs
}

// ping runs ping in ns and returns how many replies it got.
func ping(t *testing.T, ns string, args ...string) int {
	t.Helper()
	out, _ := exec.Command("ip", append([]string{"netns", "exec", ns, "ping", "-q"}, args...)...).CombinedOutput()
	m := regexp.MustCompile(`(\d+) received`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("ping %v in %s: %s", args, ns, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// queue returns the dataplane's counters of the named queue.
func (r *kernelRig) queue(t *testing.T, name string) dataplane.QueueStats {
	t.Helper()
	q := queueStats(r.d, name)
	if q.Name == "" {
		t.Fatalf("no queue %s", name)
	}
	return q
}

// TestIntegrationKernelPath: a namespace pings the address the kernel holds on port a's
// TAP through uiod (the kernel resolving ARP itself), and a TCP connection carries a
// megabyte to it and its digest back, while uiod forwards a ping stream between the two
// peer namespaces: under the test's app and under l3fwd (whose ARP and no-route frames
// go to the kernel).
func TestIntegrationKernelPath(t *testing.T) {
	for _, c := range []struct {
		name string
		l3   bool
	}{{"test app", false}, {"l3fwd", true}} {
		t.Run(c.name, func(t *testing.T) {
			testKernelPath(t, newKernelRig(t, "{mode: adaptive, idle_threshold: 300us, wait_timeout: 10ms}", c.l3))
		})
	}
}

func testKernelPath(t *testing.T, r *kernelRig) {
	if n := ping(t, r.nsA, "-c", "3", "-i", "0.2", "-W", "5", "10.231.0.1"); n != 3 {
		t.Fatalf("%d of 3 pings to the kernel's address answered", n)
	}
	if neigh := testutil.IPIn(t, r.nsA, "neigh", "show", "10.231.0.1"); !strings.Contains(neigh, r.macPort.String()) {
		t.Fatalf("nsA resolved 10.231.0.1 as %q, want port a's (the TAP's) address %s", neigh, r.macPort)
	}

	var ln net.Listener
	if err := testutil.InNetns(r.ns, func() (err error) { ln, err = net.Listen("tcp", "10.231.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			served <- err
			return
		}
		_, err = io.WriteString(c, hex.EncodeToString(h.Sum(nil)))
		served <- err
	}()
	data := make([]byte, 1<<20)
	rand.Read(data)
	sum := sha256.Sum256(data)

	forwarded := make(chan int, 1)
	go func() { forwarded <- ping(t, r.nsA, "-c", "200", "-i", "0.01", "-w", "30", r.peerB) }()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	nc := exec.Command("ip", "netns", "exec", r.nsA, "nc", "-N", "-w", "30", "10.231.0.1", port)
	nc.Stdin = bytes.NewReader(data)
	out, err := nc.Output()
	if err != nil {
		t.Fatalf("nc: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("server: %v", err)
	}
	if got := string(out); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("server's digest %q, want the megabyte's %x", got, sum)
	}
	if n := <-forwarded; n == 0 {
		t.Fatal("no ping between the peer namespaces was forwarded")
	}

	var rx, k dataplane.QueueStats
	testutil.Eventually(t, 2*time.Second, func() bool {
		rx, k = r.queue(t, "a/rx0"), r.queue(t, "a/kernel")
		return rx.RxPackets == rx.TxPackets+rx.ToKernel+rx.Drops
	}, "a/rx0 %+v: received ≠ sent + to kernel + dropped", rx)
	if rx.ToKernel < 700 || rx.TxPackets == 0 || k.TxPackets == 0 || k.Drops != 0 {
		// A megabyte is 700 or more segments of at most 1448 bytes; the kernel's ACKs
		// and the digest come back by a/kernel.
		t.Fatalf("a/rx0 %+v, a/kernel %+v: want the TCP stream to the kernel and back, and forwarded pings", rx, k)
	}
	// The TAP's rings may overflow under a loaded machine's scheduling (TCP retransmits,
	// and the digest above proves the data arrived): what it dropped it counted.
	if k := r.d.Status().Ports[0].Kernel; k == nil || k.TAP != r.d.ports[0].kernel.Name() || k.Stats.TxPackets == 0 {
		t.Errorf("/status shows port a's kernel path as %+v, want its TAP and the frames it carried", k)
	}
	if st := r.d.ports[0].kernel.Stats(); st.TxErrors != 0 || st.RxMissed != 0 {
		t.Logf("TAP dropped and counted: %+v", st)
	}
}

// TestIntegrationKernelWake: a poll thread asleep (adaptive, sleeping at the first empty
// poll, a long wait bound) wakes by the TAP's vector when the kernel sends a frame, and
// the frame goes out of the port.
func TestIntegrationKernelWake(t *testing.T) {
	r := newKernelRig(t, "{mode: adaptive, idle_threshold: 0s, wait_timeout: 1s}", false)
	arps := make(chan struct{}, 16)
	var peer wire.Port
	if err := testutil.InNetns(r.nsA, func() (err error) { peer, err = wire.ListenPacket("uiodp0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.SetHandler(func(f []byte, ts int64) {
		// The kernel's ARP request for 10.231.0.99, from the TAP's address.
		if len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0806 && bytes.Equal(f[6:12], r.macPort) && bytes.Equal(f[38:42], []byte{10, 231, 0, 99}) {
			arps <- struct{}{}
		}
	})
	for attempt := 0; ; attempt++ {
		if !testutil.WaitFor(10*time.Second, func() bool { return r.d.dp.Threads()[0].State == idle.Asleep }) {
			t.Fatalf("poll thread never fell asleep: %+v", r.d.dp.Threads()[0])
		}
		before := r.d.dp.Threads()[0].Idle
		// The kernel transmits: ping an address nobody has, which sends ARP requests out
		// of the TAP and gets no answer (nothing comes back into the ports).
		exec.Command("ip", "netns", "exec", r.ns, "ping", "-c", "1", "-W", "1", "10.231.0.99").Run()
		select {
		case <-arps:
		case <-time.After(10 * time.Second):
			t.Fatalf("the kernel's ARP request never left port a (TAP %+v, thread %+v)", r.d.ports[0].kernel.Stats(), r.d.dp.Threads()[0])
		}
		after := r.d.dp.Threads()[0].Idle
		if after.WakeInterrupt > before.WakeInterrupt {
			break
		}
		// The thread's sleep ended by its bound just as the kernel sent: try again.
		if attempt == 3 {
			t.Fatalf("the thread never woke by interrupt for the kernel's frame: before %+v, after %+v", before, after)
		}
	}
	if k := r.queue(t, "a/kernel"); k.TxPackets == 0 {
		t.Fatalf("a/kernel %+v: the kernel's frames did not leave by port a", k)
	}
}

// TestIntegrationKernelFlood: a flood of frames for the kernel overflows the TAP's ring
// (dropped and counted as tx_full, and in the TAP's TxRingFull), while the frames of the
// same stream that are forwarded keep going out of port b, every one accounted for.
func TestIntegrationKernelFlood(t *testing.T) {
	var ends *farEnds
	d, _, macs := pairKernelDaemon(t, "uiodkf0", "{mode: busy}", func(name string) { ends = openFarEnds(t, name) })
	defer ends.gen[0].Close()
	defer ends.gen[1].Close()

	toKernel := frame(0)
	copy(toKernel, macs[0][:]) // for port a itself: the app hands it to the kernel
	forward := frame(0)
	copy(forward, []byte{2, 0, 0, 0, 0, 0x0b}) // for someone behind port b
	k := d.ports[0].kernel
	sent := uint32(0)
	testutil.WaitFor(20*time.Second, func() bool {
		for range 1000 {
			sent++
			binary.BigEndian.PutUint32(forward[60:], sent)
			ends.gen[0].Send(toKernel)
			ends.gen[0].Send(toKernel)
			ends.gen[0].Send(forward)
		}
		return k.Counters().TxRingFull > 0 && sent >= 20000
	})
	var q dataplane.QueueStats
	if !testutil.Eventually(t, 5*time.Second, func() bool {
		q = queueStats(d, "a/rx0")
		return q.RxPackets == q.TxPackets+q.ToKernel+q.Drops && uint64(ends.sink[1].count()) == q.TxPackets
	}, "a/rx0 %+v, %d frames out of port b: not all accounted for", q, ends.sink[1].count()) {
		return
	}
	full := k.Counters().TxRingFull
	if full == 0 || q.DropsBy["tx_full"] < full || q.ToKernel == 0 || q.TxPackets == 0 {
		t.Fatalf("a/rx0 %+v, TAP %+v after %d frames: want some dropped at the TAP's ring, some to the kernel and some forwarded", q, k.Counters(), 3*sent)
	}
	t.Logf("%d frames in: %d forwarded, %d to the kernel, %d dropped at the TAP's full ring, %d other drops", q.RxPackets, q.TxPackets, q.ToKernel, full, q.Drops-full)
}

// queueStats returns the named queue's counters, or the zero QueueStats.
func queueStats(d *Daemon, name string) dataplane.QueueStats {
	for _, q := range d.dp.Stats() {
		if q.Name == name {
			return q
		}
	}
	return dataplane.QueueStats{}
}

// TestIntegrationKernelRefused: a start that fails on a kernel path names the interface
// and leaves the namespace's interfaces as they were: no TAP it made stays behind.
func TestIntegrationKernelRefused(t *testing.T) {
	needTUN(t)
	ns := testutil.Netns(t, "uiod-kr")
	testutil.IPIn(t, ns, "link", "add", "uiodv0", "type", "veth", "peer", "name", "uiodv1")
	var held *tap.Port
	if err := testutil.InNetns(ns, func() (err error) { held, err = tap.Open(tap.Config{Name: "uiodheld"}); return err }); err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cases := []struct {
		name   string
		ka, kb string // ports a's and b's kernel.tap
		want   string
	}{
		{"a veth", "uiodka", "uiodv0", "interface uiodv0 exists and is a veth, not a TAP"},
		{"a TAP another process holds", "uiodka", "uiodheld", "interface uiodheld is held by another process"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := testutil.IPIn(t, ns, "-br", "link", "show")
			name := fmt.Sprintf("krefused%d-%d", os.Getpid(), i)
			cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", kernel: {tap: %[2]s}}
  - {name: b, driver: sim, wire: "pair:%[1]s1", kernel: {tap: %[3]s}}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: busy}
`, name, c.ka, c.kb))
			cfg.Metrics.Listen = ""
			d := New(cfg, Options{})
			err := testutil.InNetns(ns, d.Start)
			testutil.ErrorIs(t, err, tap.ErrUnavailable, c.want)
			testutil.ErrorContains(t, err, "port b: kernel")
			if after := testutil.IPIn(t, ns, "-br", "link", "show"); after != before {
				t.Fatalf("interfaces after the failed start:\n%s\nbefore:\n%s", after, before)
			}
		})
	}
}

// TestIntegrationKernelBuiltinApps: a kernel path starts under every built-in app, though
// only l3fwd hands frames to it (reflect's rule that a queue sends back out of its RX port
// is not a kernel path's, whose frames leave by its own port).
func TestIntegrationKernelBuiltinApps(t *testing.T) {
	needTUN(t)
	ns := testutil.Netns(t, "uiod-kapps")
	for i, c := range []struct{ name, forward string }{
		{"l2fwd", "{mode: l2fwd}"},
		{"reflect", "{mode: reflect}"},
		{"l3fwd", `{mode: l3fwd, routes: [{prefix: 10.0.0.0/8, port: b, next_hop_mac: "02:00:00:00:00:01"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:kapps%[1]d-%[2]d-0", kernel: {tap: uiodkapp%[2]d}}
  - {name: b, driver: sim, wire: "pair:kapps%[1]d-%[2]d-1"}
forward: %[3]s
poll: {mode: adaptive}
`, os.Getpid(), i, c.forward))
			d, _ := startIn(t, cfg, ns, nil)
			if q := queueStats(d, "a/kernel"); q.Name == "" {
				t.Fatalf("no a/kernel queue in %+v", d.dp.Stats())
			}
		})
	}
}

// needTUN skips t on a host without /dev/net/tun (no TAP for the kernel path).
func needTUN(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
}
