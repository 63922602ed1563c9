package daemon

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/tap"
)

// followWait bounds every wait for the watcher: its resync reads every TAP each second,
// so anything it should see it sees well within this on a loaded machine.
const followWait = 10 * time.Second

// tapLink is what `ip link show` says of a TAP in ns.
type tapLink struct {
	carrier, up bool
	mtu         int
	mac         string
}

var linkRE = regexp.MustCompile(`<([^>]*)> mtu (\d+) .* link/ether ([0-9a-f:]{17})`)

func showLink(t testing.TB, ns, name string) tapLink {
	t.Helper()
	out := testutil.IPIn(t, ns, "-o", "link", "show", "dev", name)
	m := linkRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ip link show %s: %q", name, out)
	}
	flags := strings.Split(m[1], ",")
	mtu, _ := strconv.Atoi(m[2])
	return tapLink{carrier: slices.Contains(flags, "LOWER_UP"), up: slices.Contains(flags, "UP"), mtu: mtu, mac: m[3]}
}

// observed is a logger whose entries the test reads.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// logged reports whether an entry whose message contains msg has every field given.
func logged(logs *observer.ObservedLogs, msg string, fields map[string]string) bool {
	for _, e := range logs.All() {
		if !strings.Contains(e.Message, msg) {
			continue
		}
		ctx := e.ContextMap()
		ok := true
		for k, v := range fields {
			if fmt.Sprint(ctx[k]) != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// followRig is a watcher in its own namespace over TAPs whose ports the test makes.
type followRig struct {
	ns   string
	w    *tapFollower
	logs *observer.ObservedLogs
	taps []*tap.Port
}

// newFollowRig opens a TAP named names[i] with MTU 1500 for each port, and starts the
// watcher over them (allmulti[i]: kernel.allmulti).
func newFollowRig(t *testing.T, ports []nic.Port, names []string, allmulti []bool) *followRig {
	t.Helper()
	needTUN(t)
	r := &followRig{ns: testutil.Netns(t, "uiod-tf")}
	log, logs := observed()
	r.logs = logs
	err := testutil.InNetns(r.ns, func() error {
		var fs []*followedTAP
		for i, p := range ports {
			k, err := tap.Open(tap.Config{Name: names[i], MAC: p.MAC(), MTU: 1500})
			if err != nil {
				return err
			}
			t.Cleanup(func() { k.Close() })
			r.taps = append(r.taps, k)
			fs = append(fs, &followedTAP{id: i, port: fmt.Sprint("p", i), nic: p, tap: k, allmulti: allmulti[i],
				log: log.With(zap.String("tap", names[i]))})
		}
		w, err := newTAPFollower(log, fs)
		if err != nil {
			return err
		}
		w.start()
		r.w = w
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.w.stop)
	return r
}

// TestTAPFollowFilter: on ports the test makes (one with a receive filter, one
// without), a MAC set on the TAP reaches the filter port's SetMAC, and on the other is
// set back on the TAP with a warning; `ip maddr add` and an IPv6 address (its
// solicited-node group) reach SetMulticast with their MACs; the TAP's allmulticast flag
// and kernel.allmulti ask for every multicast frame; the port without a filter says
// once that it cannot follow. Without the watcher none of it happens.
func TestTAPFollowFilter(t *testing.T) {
	macA, macB, macC := net.HardwareAddr{2, 0, 0, 0x7f, 0, 0xa}, net.HardwareAddr{2, 0, 0, 0x7f, 0, 0xb}, net.HardwareAddr{2, 0, 0, 0x7f, 0, 0xc}
	fa, fc := newFilterPort(macA), newFilterPort(macC)
	plain := &macPort{}
	plain.mac.Store(&macB)
	r := newFollowRig(t, []nic.Port{fa, plain, fc}, []string{"uiodtfa", "uiodtfb", "uiodtfc"}, []bool{false, false, true})

	// A MAC set on the TAP becomes the filter port's.
	newA := "02:00:00:7f:01:0a"
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfa", "address", newA)
	testutil.Eventually(t, followWait, func() bool { return slices.Contains(fa.setMACs(), newA) },
		"filter port's SetMACs %v, want %s", fa.setMACs(), newA)
	if got := r.taps[0].MAC().String(); got != newA || fa.MAC().String() != newA {
		t.Errorf("after the change: TAP port's MAC %s, filter port's %s, want %s", got, fa.MAC(), newA)
	}
	if l := showLink(t, r.ns, "uiodtfa"); l.mac != newA {
		t.Errorf("TAP's MAC %s, want the one set, %s", l.mac, newA)
	}

	// Without a filter the TAP's MAC is set back, with the reason.
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfb", "address", "02:00:00:7f:01:0b")
	testutil.Eventually(t, followWait, func() bool { return showLink(t, r.ns, "uiodtfb").mac == macB.String() },
		"TAP without a filter has MAC %s, want it set back to %s", showLink(t, r.ns, "uiodtfb").mac, macB)
	if !logged(r.logs, "TAP MAC change refused", map[string]string{"asked_mac": "02:00:00:7f:01:0b", "mac": macB.String()}) {
		t.Errorf("no warning naming the refused MAC: %v", r.logs.All())
	}
	if st := r.w.taps[1].status(); st.MACRefused != 1 || st.FilterFollows {
		t.Errorf("status of the port without a filter: %+v", st)
	}
	if n := r.logs.FilterMessageSnippet("cannot follow the TAP").Len(); n != 1 {
		t.Errorf("the port without a filter said %d times that it cannot follow, want once", n)
	}

	// Groups the kernel joins reach SetMulticast.
	has := func(p *filterPort, want ...string) func() bool {
		return func() bool {
			g, _, ok := p.lastMulticast()
			for _, w := range want {
				if !slices.Contains(g, w) {
					return false
				}
			}
			return ok
		}
	}
	testutil.IPIn(t, r.ns, "maddr", "add", "01:00:5e:01:02:03", "dev", "uiodtfa")
	testutil.Eventually(t, followWait, has(fa, "01:00:5e:01:02:03"), "SetMulticast never got ip maddr's group: %v", fa.mcasts)
	testutil.IPIn(t, r.ns, "-6", "addr", "add", "2001:db8::12:3456/64", "dev", "uiodtfa", "nodad")
	testutil.Eventually(t, followWait, has(fa, "01:00:5e:01:02:03", "33:33:ff:12:34:56"),
		"SetMulticast never got the solicited-node group of 2001:db8::12:3456: %v", fa.mcasts)
	if _, all, _ := fa.lastMulticast(); all {
		t.Error("SetMulticast asked for every group without allmulti")
	}
	testutil.IPIn(t, r.ns, "maddr", "del", "01:00:5e:01:02:03", "dev", "uiodtfa")
	testutil.Eventually(t, followWait, func() bool {
		g, _, _ := fa.lastMulticast()
		return !slices.Contains(g, "01:00:5e:01:02:03") && slices.Contains(g, "33:33:ff:12:34:56")
	}, "the group left is still in the filter: %v", fa.mcasts)
	if st := r.w.taps[0].status(); !st.FilterFollows || st.Groups == 0 {
		t.Errorf("status of the filter port: %+v", st)
	}

	// The TAP's allmulticast flag, and kernel.allmulti from the start.
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfa", "allmulticast", "on")
	testutil.Eventually(t, followWait, func() bool { _, all, _ := fa.lastMulticast(); return all },
		"the TAP's allmulticast never reached SetMulticast: %v", fa.all)
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfa", "allmulticast", "off")
	testutil.Eventually(t, followWait, func() bool { _, all, _ := fa.lastMulticast(); return !all },
		"allmulticast off never reached SetMulticast: %v", fa.all)
	if _, all, ok := fc.lastMulticast(); !ok || !all {
		t.Errorf("kernel.allmulti port's last SetMulticast all=%v (called %v), want every group", all, ok)
	}
}

// TestTAPFollowLink: the TAP's carrier follows its port's link; a kernel-side MTU at or
// below the port's is taken by the TAP port and one above it set back with a warning
// naming the TAP, the asked MTU and the port's, and counted; a TAP set down drops the
// frames handed to it, counted, and up again takes them.
func TestTAPFollowLink(t *testing.T) {
	fp := newFilterPort(net.HardwareAddr{2, 0, 0, 0x7f, 1, 1})
	r := newFollowRig(t, []nic.Port{fp}, []string{"uiodtfl"}, []bool{false})
	k := r.taps[0]

	if l := showLink(t, r.ns, "uiodtfl"); !l.carrier {
		t.Fatalf("TAP without carrier while its port's link is up: %+v", l)
	}
	fp.down.Store(true)
	testutil.Eventually(t, followWait, func() bool { return !showLink(t, r.ns, "uiodtfl").carrier },
		"TAP kept its carrier with the port's link down: %+v", showLink(t, r.ns, "uiodtfl"))
	if st := r.w.taps[0].status(); st.Carrier {
		t.Errorf("status shows carrier with the link down: %+v", st)
	}
	fp.down.Store(false)
	testutil.Eventually(t, followWait, func() bool { return showLink(t, r.ns, "uiodtfl").carrier },
		"TAP's carrier did not come back with the link: %+v", showLink(t, r.ns, "uiodtfl"))

	// MTU down: taken.
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfl", "mtu", "1400")
	testutil.Eventually(t, followWait, func() bool { return k.MTU() == 1400 }, "TAP port's MTU %d, want 1400", k.MTU())
	// MTU above the port's: set back to the port's, logged, counted.
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfl", "mtu", "9000")
	testutil.Eventually(t, followWait, func() bool { return showLink(t, r.ns, "uiodtfl").mtu == 1500 },
		"TAP's MTU %d after asking 9000 on a 1500 port, want it set back to 1500", showLink(t, r.ns, "uiodtfl").mtu)
	if !logged(r.logs, "TAP MTU above the port's mtu refused", map[string]string{"tap": "uiodtfl", "asked_mtu": "9000", "port_mtu": "1500"}) {
		t.Errorf("no warning naming the TAP, the asked MTU and the port's: %v", r.logs.All())
	}
	if st := r.w.taps[0].status(); st.MTURefused != 1 || st.MTU != 1500 || k.MTU() != 1500 {
		t.Errorf("after the refusal: status %+v, TAP port's MTU %d", st, k.MTU())
	}

	// Down: frames for the kernel dropped and counted; up: they flow.
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	send := func() int {
		b := pool.Get()
		b.SetLen(60)
		copy(b.Bytes(), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
		return k.TxBurst(0, []*nic.Buf{b})
	}
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfl", "down")
	testutil.Eventually(t, followWait, k.Down, "the TAP port never saw its interface down")
	for range 5 {
		send()
	}
	if st := r.w.taps[0].status(); st.TxDown != 5 || !st.Down {
		t.Errorf("after 5 frames to the down TAP: status %+v, want 5 counted as tx_down", st)
	}
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodtfl", "up")
	testutil.Eventually(t, followWait, func() bool { return !k.Down() }, "the TAP port never saw its interface up again")
	before := k.Stats().TxPackets
	send()
	testutil.Eventually(t, followWait, func() bool { return k.Stats().TxPackets > before }, "no frame written to the TAP once up: %+v", k.Counters())
	if c := k.Counters(); c.TxDown != 5 || c.TxWriteErrors != 0 {
		t.Errorf("TAP counters %+v: want only the 5 frames sent while down dropped", c)
	}
}

// TestIntegrationTAPFollowsSimPort: a daemon on sim ports with a kernel path: the TAP's
// carrier follows the model's link (and is off while the device is removed), a lower
// MTU set on the TAP is taken and a higher one refused with the warning, /status and
// /metrics show it, a TAP set down drops the frames the app hands it (counted), and
// the port's filter follows the TAP exactly when its driver has one.
func TestIntegrationTAPFollowsSimPort(t *testing.T) {
	needTUN(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	ns := testutil.Netns(t, "uiod-tfs")
	name := fmt.Sprintf("tfs-%d", os.Getpid())
	ends := openFarEnds(t, name)
	defer ends.gen[0].Close()
	defer ends.gen[1].Close()
	cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", mtu: 1500, kernel: {tap: uiodtfs0, allmulti: true}}
  - {name: b, driver: sim, wire: "pair:%[1]s1"}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: adaptive, wait_timeout: 5ms}
`, name))
	cfg.Metrics.Listen = ""
	log, logs := observed()
	app := &kernelApp{}
	empty := make([][6]byte, len(cfg.Ports))
	app.macs.Store(&empty)
	d := New(cfg, Options{App: app, Log: log})
	if err := testutil.InNetns(ns, d.Start); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { d.Stop() })
	macs := [][6]byte{[6]byte(d.ports[0].nic.MAC()), [6]byte(d.ports[1].nic.MAC())}
	app.macs.Store(&macs)
	follow := func() TAPFollowStatus {
		k := d.Status().Ports[0].Kernel
		if k == nil || k.Follow == nil {
			t.Fatalf("/status has no follow section for port a's kernel path: %+v", k)
		}
		return *k.Follow
	}
	tapLinkNow := func() tapLink { return showLink(t, ns, "uiodtfs0") }

	// Carrier follows the model's link.
	if l := tapLinkNow(); !l.carrier || !follow().Carrier {
		t.Fatalf("carrier off with the port's link up: %+v, %+v", l, follow())
	}
	d.mu.Lock()
	model := d.ports[0].model
	d.mu.Unlock()
	model.SetLink(false)
	testutil.Eventually(t, followWait, func() bool { return !tapLinkNow().carrier }, "TAP kept its carrier with the model's link down: %+v", tapLinkNow())
	model.SetLink(true)
	testutil.Eventually(t, followWait, func() bool { return tapLinkNow().carrier }, "TAP's carrier never came back with the link: %+v", tapLinkNow())

	// MTU: down taken, up refused.
	testutil.IPIn(t, ns, "link", "set", "dev", "uiodtfs0", "mtu", "1280")
	testutil.Eventually(t, followWait, func() bool { return follow().MTU == 1280 }, "/status MTU %d, want 1280", follow().MTU)
	testutil.IPIn(t, ns, "link", "set", "dev", "uiodtfs0", "mtu", "4000")
	testutil.Eventually(t, followWait, func() bool { return tapLinkNow().mtu == 1500 }, "TAP's MTU %d after asking 4000 on a 1500 port", tapLinkNow().mtu)
	if !logged(logs, "TAP MTU above the port's mtu refused", map[string]string{"port": "a", "tap": "uiodtfs0", "asked_mtu": "4000", "port_mtu": "1500"}) {
		t.Errorf("no warning naming the port, TAP, asked MTU and the port's")
	}
	if f := follow(); f.MTURefused != 1 || f.MTU != 1500 {
		t.Errorf("/status after the refusal: %+v", f)
	}

	// Down: what the app hands the kernel is dropped and counted.
	testutil.IPIn(t, ns, "link", "set", "dev", "uiodtfs0", "down")
	testutil.Eventually(t, followWait, func() bool { return follow().Down }, "/status never showed the TAP down")
	toKernel := frame(0)
	copy(toKernel, macs[0][:])
	for range 20 {
		ends.gen[0].Send(toKernel)
	}
	testutil.Eventually(t, followWait, func() bool { return follow().TxDown == 20 }, "/status tx_down %d after 20 frames for the down TAP", follow().TxDown)
	if c := d.ports[0].kernel.Counters(); c.TxRingFull != 0 || c.TxWriteErrors != 0 {
		t.Errorf("TAP counters %+v: the frames should be dropped as down, not queued", c)
	}
	testutil.IPIn(t, ns, "link", "set", "dev", "uiodtfs0", "up")
	testutil.Eventually(t, followWait, func() bool { return !follow().Down }, "/status never showed the TAP up again")
	before := d.ports[0].kernel.Stats().TxPackets
	ends.gen[0].Send(toKernel)
	testutil.Eventually(t, followWait, func() bool { return d.ports[0].kernel.Stats().TxPackets > before }, "no frame reached the TAP once up")

	// The filter follows exactly when the driver has one (the Intel and virtio drivers
	// implement nic.RxFilter in their own change).
	_, hasFilter := rxFilterOf(d.ports[0].nic)
	testutil.Eventually(t, followWait, func() bool { return follow().FilterFollows == hasFilter },
		"/status filter_follows %v, driver has a filter: %v", follow().FilterFollows, hasFilter)
	if hasFilter && !follow().AllMulti {
		t.Errorf("kernel.allmulti: /status %+v, want every multicast group asked", follow())
	}
	if !hasFilter && (logs.FilterMessageSnippet("cannot follow the TAP").Len() != 1 ||
		!logged(logs, "cannot follow the TAP", map[string]string{"port": "a", "allmulti": "true"})) {
		t.Errorf("the port without a filter did not say once that it cannot follow kernel.allmulti")
	}

	// Removed: carrier off until the device is back.
	d.mu.Lock()
	dev := d.ports[0].model.Device()
	d.mu.Unlock()
	var back = make(chan struct{})
	setSimPresent(t, func(pc config.Port) bool {
		select {
		case <-back:
			return true
		default:
			return pc.Name != "a"
		}
	})
	if err := dev.RequestRemoval(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, followWait, func() bool { return !tapLinkNow().carrier }, "TAP kept its carrier while the device is removed: %+v", tapLinkNow())
	close(back)
	testutil.Eventually(t, followWait, func() bool { return !d.Status().Ports[0].Absent && tapLinkNow().carrier },
		"TAP's carrier never came back with the device: %+v", tapLinkNow())
}

// TestIntegrationTAPFollowsL3fwd: under l3fwd, a lower MTU set on port a's TAP becomes
// l3fwd's egress MTU for port a (a new table generation): a DF ping of 1228 bytes from
// behind port b reaches nsA before and is refused (mtu_exceeded) after; the TAP's MTU
// back at the port's lets it through again.
func TestIntegrationTAPFollowsL3fwd(t *testing.T) {
	r := newKernelRig(t, "{mode: adaptive, idle_threshold: 300us, wait_timeout: 10ms}", true)
	big := func() int {
		return ping(t, r.nsB, "-c", "2", "-i", "0.2", "-W", "2", "-M", "do", "-s", "1200", "10.231.0.2")
	}
	if n := big(); n == 0 {
		t.Fatal("no 1228-byte DF ping from nsB reached nsA at MTU 1500")
	}
	gen := r.d.router.Load().FIB().Generation
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodk0", "mtu", "1000")
	testutil.Eventually(t, followWait, func() bool { return r.d.router.Load().FIB().Generation > gen },
		"l3fwd's tables never followed the TAP's MTU (generation %d)", r.d.router.Load().FIB().Generation)
	before := r.queue(t, "b/rx0").DropsBy["mtu_exceeded"]
	if n := big(); n != 0 {
		t.Fatalf("%d DF pings of 1228 bytes forwarded out of port a at its TAP's MTU 1000", n)
	}
	if after := r.queue(t, "b/rx0").DropsBy["mtu_exceeded"]; after <= before {
		t.Errorf("b/rx0 mtu_exceeded %d → %d: the refused pings were not counted", before, after)
	}
	if n := ping(t, r.nsB, "-c", "2", "-i", "0.2", "-W", "2", "-s", "900", "10.231.0.2"); n == 0 {
		t.Error("pings within the new MTU were not forwarded")
	}
	testutil.IPIn(t, r.ns, "link", "set", "dev", "uiodk0", "mtu", "1500")
	testutil.Eventually(t, followWait, func() bool { return big() > 0 }, "DF pings of 1228 bytes still refused with the TAP back at 1500")
}
