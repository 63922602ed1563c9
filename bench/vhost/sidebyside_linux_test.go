package vhost

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
	rounds   = flag.Int("vhost.rounds", 3, "rounds of every back end, the order rotated each round")
	probes   = flag.Int("vhost.probes", 5000, "probes per back end per round")
	interval = flag.Duration("vhost.interval", 400*time.Microsecond, "gap between probes")
	idleFor  = flag.Duration("vhost.idle", 10*time.Second, "idle stretch whose CPU is measured, client connected")
	only     = flag.String("vhost.backends", "", "comma-separated subset of the back ends (default all)")
)

// backends are measured in this order in the first round, rotated by one each round.
var backends = []string{"testpmd", "uiod-busy", "uiod-adaptive", "uiod-auto"}

// The back end polls on CPU 0 (testpmd's forwarding lcore, uiod's poll thread), the client
// forwards on CPU 1.
const (
	backendCPU = "0"
	clientCPU  = "1"
)

// bench is one run's fixed parts: the binaries, the namespace and a scratch directory.
type bench struct {
	uiod, testpmd, ns, dir string
}

// TestVhostSideBySide measures, in one run, the round trip from a veth's far end through
// each back end to the same virtio-user client (testpmd macswap) and back, and the back
// end's process CPU while probed and while idle. It runs only with UIOD_VHOST_BENCH=1
// (bench/vhost/run.sh sets it), as root, with dpdk-testpmd and the af_packet PMD.
func TestVhostSideBySide(t *testing.T) {
	if os.Getenv("UIOD_VHOST_BENCH") != "1" {
		t.Skip("the vhost-user side-by-side benchmark runs by hand: bench/vhost/run.sh")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespace, AF_PACKET, dpdk-testpmd)")
	}
	testpmd, err := exec.LookPath("dpdk-testpmd")
	if err != nil {
		t.Skip("dpdk-testpmd not installed (apt-get install dpdk): ", err)
	}
	if pmd := afPacketPMD(); pmd == "" {
		t.Skip("DPDK's af_packet PMD (librte_net_af_packet.so) not found under /usr/lib/*/dpdk")
	}
	b := &bench{uiod: qemutest.BuildUIOD(t), testpmd: testpmd, ns: testutil.Netns(t, "uiod-vhb"), dir: t.TempDir()}
	testutil.Sysctl(t, b.ns, "net.ipv6.conf.all.disable_ipv6", "1")
	testutil.Sysctl(t, b.ns, "net.ipv6.conf.default.disable_ipv6", "1")
	testutil.IPIn(t, b.ns, "link", "add", "vethA", "type", "veth", "peer", "name", "vethB")
	for _, l := range []string{"lo", "vethA", "vethB"} {
		testutil.IPIn(t, b.ns, "link", "set", l, "up")
	}

	order := backends
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
			t.Logf("%s round %d: p50 %.1f µs p99 %.1f µs lost %d late %d, CPU probed %.2f %% idle %.3f %%, run-queue wait back end %v client %v (load %s)",
				name, r+1, res.p50us(), res.p99us(), res.lat.Lost, res.lat.Late, res.probeCPU, res.idleCPU,
				res.beWait.Round(time.Millisecond), res.clWait.Round(time.Millisecond), res.load)
			rep.runs = append(rep.runs, res)
		}
	}
	rep.ended, rep.loadEnd = time.Now().UTC(), testutil.LoadAvg()
	md := rep.markdown()
	t.Log("\n" + md)
	if path := os.Getenv("UIOD_VHOST_REPORT"); path != "" {
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

// measure starts back end name and the client, waits until probes come back, then probes
// and idles, reading the back end's CPU around each; both processes are stopped after.
func (b *bench) measure(t *testing.T, name string, round int) (run, error) {
	res := run{name: name, round: round + 1}
	dir := filepath.Join(b.dir, fmt.Sprintf("%s-%d", name, round+1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	sock := filepath.Join(dir, "vhost.sock")
	be, err := b.startBackend(t, name, dir, sock)
	if err != nil {
		return res, err
	}
	defer be.Stop()
	if !testutil.WaitFor(30*time.Second, func() bool { _, err := os.Stat(sock); return err == nil || be.Exited() }) || be.Exited() {
		return res, fmt.Errorf("no socket %s:\n%s", sock, be.Tail(30))
	}
	cl := testpmd(t, dir, "client", b.testpmd, "", fmt.Sprintf("uiodvhbc%d", os.Getpid()),
		[]string{"--lcores", "0@" + clientCPU + ",1@" + clientCPU, "--main-lcore=0", "--no-pci", "--no-huge", "-m", "512",
			"--vdev", "net_virtio_user0,path=" + sock + ",queues=1"},
		[]string{"--forward-mode=macswap", "--total-num-mbufs=4096", "--nb-cores=1", "-a"})
	defer cl.Stop()
	// testpmd waits up to 9 s for its ports' links before it forwards: probe until a
	// short run comes back whole.
	deadline := time.Now().Add(90 * time.Second)
	for {
		lat, _, err := b.latency(dir, "warmup", 200, time.Millisecond, 200*time.Millisecond)
		if err == nil && lat.Received == lat.Sent && lat.Sent > 0 {
			break
		}
		if be.Exited() || cl.Exited() || time.Now().After(deadline) {
			return res, fmt.Errorf("no probe back (%v, %+v):\nback end:\n%s\nclient:\n%s", err, lat,
				be.Tail(20), cl.Tail(20))
		}
	}
	lat, secs, bed, cld, err := b.probed(be, cl, dir)
	if err != nil {
		return res, err
	}
	res.lat, res.probeCPU, res.beWait, res.clWait = lat, 100*bed.Run.Seconds()/secs, bed.Wait, cld.Wait
	time.Sleep(time.Second) // out of the traffic: adaptive deep idle, auto's estimate
	c0, err := be.Sched()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	time.Sleep(*idleFor)
	c1, err := be.Sched()
	if err != nil {
		return res, err
	}
	res.idleCPU = 100 * c1.Sub(c0).Run.Seconds() / time.Since(t0).Seconds()
	res.load = testutil.LoadAvg()
	if be.Exited() || cl.Exited() {
		return res, fmt.Errorf("a process ended during the run:\nback end:\n%s\nclient:\n%s",
			be.Tail(20), cl.Tail(20))
	}
	return res, nil
}

// probed runs the measured probes, returning the report, the run's wall seconds and the
// back end's and the client's scheduler accounting over it.
func (b *bench) probed(be, cl *proc, dir string) (lat qemutest.LatencyReport, secs float64, bed, cld sched, err error) {
	b0, err := be.Sched()
	if err != nil {
		return
	}
	c0, err := cl.Sched()
	if err != nil {
		return
	}
	t0 := time.Now()
	lat, out, err := b.latency(dir, "probes", *probes, *interval, time.Second)
	secs = time.Since(t0).Seconds()
	if err != nil {
		err = fmt.Errorf("%v\n%s", err, out)
		return
	}
	b1, err := be.Sched()
	if err != nil {
		return
	}
	c1, err := cl.Sched()
	if err != nil {
		return
	}
	if lat.Samples == 0 {
		err = fmt.Errorf("no probe came back:\n%s", out)
	}
	return lat, secs, b1.Sub(b0), c1.Sub(c0), err
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

// startBackend starts back end name in the namespace, serving the vhost-user socket sock
// and bridging it to vethB.
func (b *bench) startBackend(t *testing.T, name, dir, sock string) (*proc, error) {
	if name == "testpmd" {
		return testpmd(t, dir, name, b.testpmd, b.ns, fmt.Sprintf("uiodvhbb%d", os.Getpid()),
			[]string{"-l", "0-1", "--main-lcore=1", "--no-pci", "--no-huge", "-m", "512",
				"--vdev", "net_vhost0,iface=" + sock + ",queues=1", "--vdev", "net_af_packet0,iface=vethB"},
			[]string{"--forward-mode=io", "--total-num-mbufs=8192", "--nb-cores=1", "-a"}), nil
	}
	policy, ok := strings.CutPrefix(name, "uiod-")
	if !ok {
		return nil, fmt.Errorf("back end %q: want testpmd or uiod-POLICY", name)
	}
	poll := "mode: " + policy
	if policy == "auto" {
		poll = "mode: adaptive, idle_threshold: auto"
	}
	cfg := filepath.Join(dir, "uiod.yaml")
	yaml := fmt.Sprintf(`state_dir: %s
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: nic, driver: sim, wire: "afpacket:vethB", promiscuous: true}
  - {name: vm, driver: vhost-user, socket: %s}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {%s, cpus: [%s]}
`, filepath.Join(dir, "state"), sock, poll, backendCPU)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return testutil.StartProc(t, dir, name, "ip", "netns", "exec", b.ns, b.uiod, "run", "--config", cfg), nil
}
