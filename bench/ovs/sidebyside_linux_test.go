package ovs

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

var (
	rounds   = flag.Int("ovs.rounds", 3, "rounds of every switch, the order rotated each round")
	probes   = flag.Int("ovs.probes", 5000, "probes per switch per round")
	interval = flag.Duration("ovs.interval", 400*time.Microsecond, "gap between probes")
	idleFor  = flag.Duration("ovs.idle", 10*time.Second, "idle stretch whose CPU is measured, front ends connected")
	settle   = flag.Duration("ovs.settle", 5*time.Second, "wait after the first probes come back, before a discarded warm-up at the probes' rate")
	only     = flag.String("ovs.switches", "", "comma-separated subset of the switches (default all)")
)

// switches are measured in this order in the first round, rotated by one each round.
var switches = []string{"ovs-dpdk", "uiod-busy", "uiod-adaptive"}

// The switch polls on CPU 0 (OVS's one PMD thread, uiod's poll thread); the front ends
// forward on CPU 1.
const (
	switchCPU   = "0"
	frontCPU    = "1"
	hugepages   = 512 // 2 MiB pages: 1 GiB, of which OVS takes socketMemMB
	socketMemMB = "512"
)

// Debian's openvswitch-switch-dpdk installs the DPDK build of ovs-vswitchd here (the
// ovs-vswitchd alternative may point at either build).
const (
	ovsVswitchdDPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
	ovsSchema       = "/usr/share/openvswitch/vswitch.ovsschema"
)

// bench is one run's fixed parts: the binaries, the namespace, the huge pages and a
// scratch directory.
type bench struct {
	uiod, testpmd, ns, dir, hugeDir string
	ovs                             map[string]string // ovsdb-tool, ovsdb-server, ovs-vsctl, ovs-ofctl
}

// TestOVSSideBySide measures, in one run, the round trip from a veth's far end through
// one DPDK testpmd front end (virtio-user), across each switch between two vhost-user
// ports, to a second virtio-user port of the same testpmd and back out of the veth; and
// the switch's process CPU while probed and while idle. It runs only with UIOD_OVS_BENCH=1
// (bench/ovs/run.sh sets it), as root, with OVS-DPDK, dpdk-testpmd and huge pages.
func TestOVSSideBySide(t *testing.T) {
	if os.Getenv("UIOD_OVS_BENCH") != "1" {
		t.Skip("the OVS-DPDK side-by-side benchmark runs by hand: bench/ovs/run.sh")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (huge pages, network namespace, AF_PACKET, ovs-vswitchd, dpdk-testpmd)")
	}
	b := &bench{ovs: map[string]string{}}
	for _, tool := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-ofctl"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not installed (apt-get install openvswitch-switch-dpdk): %v", tool, err)
		}
		b.ovs[tool] = p
	}
	for _, f := range []string{ovsVswitchdDPDK, ovsSchema} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("OVS-DPDK not installed (apt-get install openvswitch-switch-dpdk): %v", err)
		}
	}
	var err error
	if b.testpmd, err = exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("dpdk-testpmd not installed (apt-get install dpdk): ", err)
	}
	if afPacketPMD() == "" {
		t.Skip("DPDK's af_packet PMD (librte_net_af_packet.so) not found under /usr/lib/*/dpdk")
	}
	b.dir = t.TempDir()
	if b.hugeDir, err = reserveHugepages(t, hugepages, b.dir); err != nil {
		t.Skip("no huge pages for OVS-DPDK: ", err)
	}
	b.uiod = qemutest.BuildUIOD(t)
	b.ns = testutil.Netns(t, "uiod-ovs")
	testutil.Sysctl(t, b.ns, "net.ipv6.conf.all.disable_ipv6", "1")
	testutil.Sysctl(t, b.ns, "net.ipv6.conf.default.disable_ipv6", "1")
	testutil.IPIn(t, b.ns, "link", "add", "vethA", "type", "veth", "peer", "name", "vethB")
	for _, l := range []string{"lo", "vethA", "vethB"} {
		testutil.IPIn(t, b.ns, "link", "set", l, "up")
	}

	order := switches
	if *only != "" {
		order = strings.Split(*only, ",")
	}
	rep := report{started: time.Now().UTC(), loadStart: testutil.LoadAvg(), rounds: *rounds, probes: *probes, interval: *interval, idle: *idleFor}
	for r := range *rounds {
		for i := range order {
			name := order[(i+r)%len(order)]
			res, err := b.measure(t, name, r)
			if err != nil {
				t.Fatalf("%s round %d: %v", name, r+1, err)
			}
			t.Logf("%s round %d: p50 %.1f µs p99 %.1f µs lost %d late %d, CPU probed %.2f %% idle %.3f %%, run-queue wait switch %v front end %v (load %s)",
				name, r+1, res.p50us(), res.p99us(), res.lat.Lost, res.lat.Late, res.probeCPU, res.idleCPU,
				res.swWait.Round(time.Millisecond), res.feWait.Round(time.Millisecond), res.load)
			rep.runs = append(rep.runs, res)
		}
	}
	rep.ended, rep.loadEnd = time.Now().UTC(), testutil.LoadAvg()
	md := rep.markdown()
	t.Log("\n" + md)
	if path := os.Getenv("UIOD_OVS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// afPacketPMD is the path of DPDK's af_packet PMD plugin, or "".
func afPacketPMD() string {
	for _, pat := range []string{"/usr/lib/*/dpdk/pmds-*/librte_net_af_packet.so*", "/usr/lib/*/librte_net_af_packet.so*"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// sw is a running switch: the process whose CPU is measured and what else must stop.
type sw struct {
	main  *proc   // ovs-vswitchd or uiod
	extra []*proc // ovsdb-server
}

func (s *sw) Stop() {
	s.main.Stop()
	for _, p := range s.extra {
		p.Stop()
	}
}

func (s *sw) Exited() bool {
	for _, p := range append([]*proc{s.main}, s.extra...) {
		if p.Exited() {
			return true
		}
	}
	return false
}

// measure starts switch name with its two vhost-user sockets and the front end, waits
// until probes come back, then probes and idles, reading the switch's CPU around each;
// everything is stopped after.
func (b *bench) measure(t *testing.T, name string, round int) (run, error) {
	res := run{name: name, round: round + 1}
	dir := filepath.Join(b.dir, fmt.Sprintf("%s-%d", name, round+1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	socks := [2]string{filepath.Join(dir, "vhA"), filepath.Join(dir, "vhB")}
	s, err := b.startSwitch(t, name, dir, socks)
	if s != nil {
		defer s.Stop()
	}
	if err != nil {
		return res, err
	}
	ready := func() bool {
		for _, p := range socks {
			if _, err := os.Stat(p); err != nil {
				return false
			}
		}
		return true
	}
	if !testutil.WaitFor(60*time.Second, func() bool { return ready() || s.Exited() }) || s.Exited() {
		return res, fmt.Errorf("no sockets %v:\n%s", socks, s.main.Tail(30))
	}
	fe := b.frontEnd(t, dir, socks)
	defer fe.Stop()
	// testpmd waits up to 9 s for its ports' links before it forwards: probe until a short
	// run comes back whole.
	deadline := time.Now().Add(90 * time.Second)
	for {
		lat, _, err := b.latency(dir, "warmup", 200, time.Millisecond, 200*time.Millisecond)
		if err == nil && lat.Received == lat.Sent && lat.Sent > 0 {
			break
		}
		if s.Exited() || fe.Exited() || time.Now().After(deadline) {
			return res, fmt.Errorf("no probe back (%v, %+v):\nswitch:\n%s\nfront end:\n%s", err, lat,
				s.main.Tail(20), fe.Tail(20))
		}
	}
	// The first seconds after the links come up are slower for every switch (OVS
	// reassigns its RX queues, pages fault in): settle, then warm up at the probes' rate.
	time.Sleep(*settle)
	if _, out, err := b.latency(dir, "settle", 2000, *interval, time.Second); err != nil {
		return res, fmt.Errorf("%v\n%s", err, out)
	}
	c0, err := s.main.Sched()
	if err != nil {
		return res, err
	}
	f0, err := fe.Sched()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	lat, out, err := b.latency(dir, "probes", *probes, *interval, time.Second)
	secs := time.Since(t0).Seconds()
	if err != nil {
		return res, fmt.Errorf("%v\n%s", err, out)
	}
	if lat.Samples == 0 {
		return res, fmt.Errorf("no probe came back:\n%s", out)
	}
	c1, err := s.main.Sched()
	if err != nil {
		return res, err
	}
	f1, err := fe.Sched()
	if err != nil {
		return res, err
	}
	res.lat, res.probeCPU = lat, 100*c1.Sub(c0).Run.Seconds()/secs
	res.swWait, res.feWait = c1.Sub(c0).Wait, f1.Sub(f0).Wait
	time.Sleep(time.Second) // out of the traffic: adaptive deep idle
	c0, err = s.main.Sched()
	if err != nil {
		return res, err
	}
	t0 = time.Now()
	time.Sleep(*idleFor)
	c1, err = s.main.Sched()
	if err != nil {
		return res, err
	}
	res.idleCPU = 100 * c1.Sub(c0).Run.Seconds() / time.Since(t0).Seconds()
	res.load = testutil.LoadAvg()
	if s.Exited() || fe.Exited() {
		return res, fmt.Errorf("a process ended during the run:\nswitch:\n%s\nfront end:\n%s", s.main.Tail(20), fe.Tail(20))
	}
	return res, nil
}

// frontEnd starts the one testpmd that is both front ends, in the namespace on CPU 1:
// ports 0 and 1 are virtio-user on the switch's sockets A and B, port 2 is af_packet on
// vethB. Chained io forwarding (0→1, 1→2, 2→0) sends what comes in on vethB into the
// switch at A and what the switch delivers at B back out of vethB: a probe crosses the
// switch once, A to B, unchanged.
func (b *bench) frontEnd(t *testing.T, dir string, socks [2]string) *proc {
	prefix := fmt.Sprintf("uiodovsfe%d", os.Getpid())
	argv := []string{"ip", "netns", "exec", b.ns, b.testpmd,
		"--lcores", "0@" + frontCPU + ",1@" + frontCPU, "--main-lcore=0", "--no-pci", "--no-huge", "-m", "512",
		"--vdev", "net_virtio_user0,path=" + socks[0] + ",queues=1",
		"--vdev", "net_virtio_user1,path=" + socks[1] + ",queues=1",
		"--vdev", "net_af_packet0,iface=vethB",
		"--file-prefix=" + prefix, "--",
		"--forward-mode=io", "--port-topology=chained", "--total-num-mbufs=8192", "--nb-cores=1", "-a"}
	p := testutil.StartProcEnv(t, dir, "front-end", nil, argv...)
	p.RunDir = filepath.Join("/var/run/dpdk", prefix)
	return p
}

// latency runs `uiod latency` in the namespace: count probes gap apart out of vethA, back
// into it.
func (b *bench) latency(dir, label string, count int, gap, timeout time.Duration) (qemutest.LatencyReport, string, error) {
	var rep qemutest.LatencyReport
	js := filepath.Join(dir, label+".json")
	os.Remove(js)
	out, err := exec.Command("ip", "netns", "exec", b.ns, b.uiod, "latency", "--tx", "afpacket:vethA",
		"--count", strconv.Itoa(count), "--interval", gap.String(), "--timeout", timeout.String(),
		"--label", label, "--json", js).CombinedOutput()
	if err != nil {
		return rep, string(out), fmt.Errorf("uiod latency: %w", err)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		return rep, string(out), err
	}
	return rep, string(out), json.Unmarshal(data, &rep)
}

// startSwitch starts switch name serving the vhost-user sockets socks.
func (b *bench) startSwitch(t *testing.T, name, dir string, socks [2]string) (*sw, error) {
	if name == "ovs-dpdk" {
		return b.startOVS(t, dir, socks)
	}
	policy, ok := strings.CutPrefix(name, "uiod-")
	if !ok {
		return nil, fmt.Errorf("switch %q: want ovs-dpdk or uiod-POLICY (busy, adaptive, auto, adaptive@DURATION)", name)
	}
	poll, err := testutil.PollSection(policy, switchCPU)
	if err != nil {
		return nil, fmt.Errorf("switch %q: %w", name, err)
	}
	cfg := filepath.Join(dir, "uiod.yaml")
	yaml := fmt.Sprintf(`state_dir: %s
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: a, driver: vhost-user, socket: %s}
  - {name: b, driver: vhost-user, socket: %s}
forward: {mode: bridge}
poll: %s
`, filepath.Join(dir, "state"), socks[0], socks[1], poll)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return &sw{main: testutil.StartProcEnv(t, dir, name, nil, "ip", "netns", "exec", b.ns, b.uiod, "run", "--config", cfg)}, nil
}

// startOVS starts a private ovsdb-server and a DPDK ovs-vswitchd (its db, sockets, logs
// and run directory all in dir; its PMD thread on CPU 0; its huge pages from b.hugeDir),
// with one netdev bridge and two dpdkvhostuser ports whose sockets are socks. Switching is
// the NORMAL action (MAC learning), as uiod's bridge; the bridge's own internal port is
// kept out of floods.
func (b *bench) startOVS(t *testing.T, dir string, socks [2]string) (*sw, error) {
	env := []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_SYSCONFDIR=" + dir, "OVS_PKGDATADIR=/usr/share/openvswitch"}
	db, dbSock := filepath.Join(dir, "conf.db"), filepath.Join(dir, "db.sock")
	if out, err := exec.Command(b.ovs["ovsdb-tool"], "create", db, ovsSchema).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ovsdb-tool create: %v: %s", err, out)
	}
	s := &sw{}
	dbs := testutil.StartProcEnv(t, dir, "ovsdb-server", env, b.ovs["ovsdb-server"], db, "--remote=punix:"+dbSock,
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--pidfile="+filepath.Join(dir, "ovsdb-server.pid"))
	s.extra = append(s.extra, dbs)
	if !testutil.WaitFor(20*time.Second, func() bool { _, err := os.Stat(dbSock); return err == nil || dbs.Exited() }) || dbs.Exited() {
		s.main = dbs
		return s, fmt.Errorf("ovsdb-server: no %s:\n%s", dbSock, dbs.Tail(20))
	}
	vsctl := func(args ...string) error {
		argv := append([]string{"--db=unix:" + dbSock, "--timeout=60"}, args...)
		cmd := exec.Command(b.ovs["ovs-vsctl"], argv...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	prefix := fmt.Sprintf("uiodovs%d", os.Getpid())
	if err := vsctl("--no-wait", "init", "--", "set", "Open_vSwitch", ".",
		"other_config:dpdk-init=true",
		"other_config:dpdk-socket-mem="+socketMemMB,
		"other_config:pmd-cpu-mask=0x1",
		`other_config:dpdk-extra="--file-prefix=`+prefix+` --huge-dir=`+b.hugeDir+` --no-pci"`,
	); err != nil {
		s.main = dbs
		return s, err
	}
	s.main = testutil.StartProcEnv(t, dir, "ovs-vswitchd", env, "ip", "netns", "exec", b.ns, ovsVswitchdDPDK, "unix:"+dbSock,
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--pidfile="+filepath.Join(dir, "ovs-vswitchd.pid"),
		"--log-file="+filepath.Join(dir, "ovs-vswitchd.log"))
	s.main.RunDir = filepath.Join("/var/run/dpdk", prefix)
	if err := vsctl("add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev"); err != nil {
		return s, fmt.Errorf("%w\n%s", err, s.main.Tail(20))
	}
	for i, p := range socks {
		if err := vsctl("add-port", "br0", filepath.Base(p), "--", "set", "Interface", filepath.Base(p), "type=dpdkvhostuser",
			"ofport_request="+strconv.Itoa(i+1)); err != nil {
			return s, fmt.Errorf("%w\n%s", err, s.main.Tail(20))
		}
	}
	ofctl := exec.Command(b.ovs["ovs-ofctl"], "mod-port", "br0", "br0", "no-flood")
	ofctl.Env = append(os.Environ(), env...)
	if out, err := ofctl.CombinedOutput(); err != nil {
		return s, fmt.Errorf("ovs-ofctl mod-port br0 br0 no-flood: %v: %s", err, out)
	}
	return s, nil
}
