package afxdp

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// The forwarders, in the first round's order (rotated by one each round). kernel is the
// far end's own stack answering the echo requests: nothing holds the interface.
var (
	shortForwarders = []string{"uiod-busy", "uiod-adaptive", "testpmd", "kernel"}
	longForwarders  = []string{"uiod-busy", "uiod-adaptive", "uiod-auto", "uiod-adaptive@2ms", "testpmd", "kernel", "uiod-busy-generic", "uiod-adaptive-generic"}
)

// The forwarder polls on CPU 0 (uiod's poll thread, testpmd's forwarding lcore), the
// prober runs on CPU 1.
const (
	forwarderCPU = 0
	proberCPU    = 1
)

// params are one run's sizes: the short version's inside go test, the long one's with
// UIOD_AFXDP_BENCH=1.
type params struct {
	rounds, probes int
	gap, idle      time.Duration
	forwarders     []string
}

func benchParams() (params, bool) {
	if os.Getenv("UIOD_AFXDP_BENCH") != "1" {
		return params{rounds: 1, probes: 300, gap: time.Millisecond, idle: 2 * time.Second, forwarders: shortForwarders}, false
	}
	p := params{rounds: 3, probes: 5000, gap: time.Millisecond, idle: 10 * time.Second, forwarders: longForwarders}
	if n, err := strconv.Atoi(os.Getenv("UIOD_AFXDP_ROUNDS")); err == nil && n > 0 {
		p.rounds = n
	}
	if n, err := strconv.Atoi(os.Getenv("UIOD_AFXDP_PROBES")); err == nil && n > 0 {
		p.probes = n
	}
	if f := os.Getenv("UIOD_AFXDP_FORWARDERS"); f != "" {
		p.forwarders = strings.Split(f, ",")
	}
	return p, true
}

// rig is the veth pair: vethA in namespace P (the prober's, 10.77.0.1), vethB in F (the
// forwarders', 10.77.0.2).
type rig struct {
	p, f, uiod, testpmd, dir string
	macB                     net.HardwareAddr
	prober                   *prober
}

// result is one forwarder's figures in one round.
type result struct {
	name               string
	round              int
	r                  rtts
	probedCPU, idleCPU float64 // % of one core; -1 for kernel (no process)
}

// TestAFXDPSideBySide probes, with the same ICMP echo requests on one veth pair in one
// run, uiod af_xdp reflect (busy, adaptive), DPDK's net_af_xdp testpmd macswap and the
// kernel answering, and reads each forwarder's CPU while probed and idle. Inside go
// test it is short and asserts only that every forwarder answers and that adaptive's idle
// CPU is below busy's; with UIOD_AFXDP_BENCH=1 (bench/afxdp/run.sh) it is the long run
// whose table BENCHMARKS.md quotes.
func TestAFXDPSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts uiod and testpmd")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, XDP, dpdk-testpmd)")
	}
	testpmd, err := exec.LookPath("dpdk-testpmd")
	if err != nil {
		t.Skip("dpdk-testpmd not installed (apt-get install dpdk): ", err)
	}
	if m, _ := filepath.Glob("/usr/lib/*/dpdk/pmds-*/librte_net_af_xdp.so*"); len(m) == 0 {
		t.Skip("DPDK's net_af_xdp PMD not found under /usr/lib/*/dpdk")
	}
	par, long := benchParams()
	r := newRig(t, testpmd)
	started := time.Now().UTC()
	load0 := testutil.LoadAvg()
	var all []result
	for round := range par.rounds {
		for i := range par.forwarders {
			name := par.forwarders[(i+round)%len(par.forwarders)]
			res, err := r.measure(t, name, round+1, par)
			if err != nil {
				t.Fatalf("%s round %d: %v", name, round+1, err)
			}
			t.Logf("%s round %d: p50 %.1f µs p99 %.1f µs, %d of %d back, CPU probed %.2f %% idle %.3f %%",
				name, round+1, us(res.r.quantile(0.5)), us(res.r.quantile(0.99)), len(res.r.samples), par.probes, res.probedCPU, res.idleCPU)
			all = append(all, res)
		}
	}
	md := report(all, par, started, load0, testutil.LoadAvg())
	t.Log("\n" + md)
	if path := os.Getenv("UIOD_AFXDP_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if long {
		return
	}
	// What cannot flake: every forwarder answers, and adaptive idles below busy (busy
	// spins its poll thread; adaptive sleeps on the socket).
	for _, res := range all {
		if len(res.r.samples) < par.probes/2 {
			t.Errorf("%s: %d of %d probes back", res.name, len(res.r.samples), par.probes)
		}
	}
	busy, adaptive := find(all, "uiod-busy"), find(all, "uiod-adaptive")
	if adaptive.idleCPU >= busy.idleCPU {
		t.Errorf("idle CPU: adaptive %.3f %%, busy %.3f %%: adaptive did not sleep", adaptive.idleCPU, busy.idleCPU)
	}
}

func find(rs []result, name string) result {
	i := slices.IndexFunc(rs, func(r result) bool { return r.name == name })
	if i < 0 {
		return result{name: name}
	}
	return rs[i]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func newRig(t *testing.T, testpmd string) *rig {
	t.Helper()
	r := &rig{p: testutil.Netns(t, "uiodxbp"), f: testutil.Netns(t, "uiodxbf"), testpmd: testpmd, dir: t.TempDir()}
	r.uiod = testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
	testutil.IP(t, "link", "add", "vethA", "netns", r.p, "type", "veth", "peer", "name", "vethB", "netns", r.f)
	for _, ns := range []string{r.p, r.f} {
		testutil.Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6", "1")
		testutil.Sysctl(t, ns, "net.ipv6.conf.default.disable_ipv6", "1")
		testutil.IPIn(t, ns, "link", "set", "lo", "up")
	}
	testutil.IPIn(t, r.p, "addr", "add", "10.77.0.1/24", "dev", "vethA")
	testutil.IPIn(t, r.f, "addr", "add", "10.77.0.2/24", "dev", "vethB")
	testutil.IPIn(t, r.p, "link", "set", "vethA", "up")
	testutil.IPIn(t, r.f, "link", "set", "vethB", "up")
	if err := testutil.InNetns(r.f, func() error {
		ifc, err := net.InterfaceByName("vethB")
		if err == nil {
			r.macB = ifc.HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := testutil.InNetns(r.p, func() error {
		var err error
		r.prober, err = newProber("vethA", r.macB, net.IPv4(10, 77, 0, 1), net.IPv4(10, 77, 0, 2))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.prober.Close() })
	return r
}

// measure starts forwarder name, waits until probes come back, probes, then idles; its
// CPU is read around each.
func (r *rig) measure(t *testing.T, name string, round int, par params) (result, error) {
	res := result{name: name, round: round, probedCPU: -1, idleCPU: -1}
	dir := filepath.Join(r.dir, fmt.Sprintf("%s-%d", name, round))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	fw, err := r.startForwarder(t, name, dir)
	if err != nil {
		return res, err
	}
	if fw != nil {
		defer fw.Stop()
	}
	// testpmd waits for its port's link before it forwards: probe until 50 in a row come
	// back.
	deadline := time.Now().Add(60 * time.Second)
	for {
		w, err := r.prober.run(50, time.Millisecond, 100*time.Millisecond, proberCPU)
		if err != nil {
			return res, err
		}
		if w.lost == 0 {
			break
		}
		if (fw != nil && fw.Exited()) || time.Now().After(deadline) {
			log := ""
			if fw != nil {
				log = fw.Tail(30)
			}
			return res, fmt.Errorf("no answer (%d of 50 lost):\n%s", w.lost, log)
		}
	}
	c0, t0 := r.cpu(fw)
	res.r, err = r.prober.run(par.probes, par.gap, 200*time.Millisecond, proberCPU)
	if err != nil {
		return res, err
	}
	c1, t1 := r.cpu(fw)
	time.Sleep(time.Second) // out of the traffic: adaptive deep idle
	c2, t2 := r.cpu(fw)
	time.Sleep(par.idle)
	c3, t3 := r.cpu(fw)
	if fw != nil {
		res.probedCPU = 100 * float64(c1-c0) / float64(t1.Sub(t0))
		res.idleCPU = 100 * float64(c3-c2) / float64(t3.Sub(t2))
		if fw.Exited() {
			return res, fmt.Errorf("forwarder ended during the run:\n%s", fw.Tail(30))
		}
	}
	return res, nil
}

// cpu is fw's CPU time so far and the time of reading (0 for the kernel).
func (r *rig) cpu(fw *proc) (time.Duration, time.Time) {
	if fw == nil {
		return 0, time.Now()
	}
	sc, _ := fw.Sched()
	d := sc.Run
	return d, time.Now()
}

// startForwarder starts forwarder name on vethB in F: nil for the kernel.
func (r *rig) startForwarder(t *testing.T, name, dir string) (*proc, error) {
	switch name {
	case "kernel":
		return nil, nil
	case "testpmd":
		prefix := fmt.Sprintf("uiodxb%d", os.Getpid())
		p := testutil.StartProc(t, dir, name, "ip", "netns", "exec", r.f, r.testpmd,
			"-l", fmt.Sprintf("%d-%d", forwarderCPU, proberCPU), fmt.Sprintf("--main-lcore=%d", proberCPU), "--no-pci", "--no-huge", "-m", "512",
			"--vdev", "net_af_xdp0,iface=vethB", "--file-prefix="+prefix, "--",
			"--forward-mode=macswap", "--nb-cores=1", "--total-num-mbufs=8192", "-a")
		p.RunDir = filepath.Join("/var/run/dpdk", prefix)
		return p, nil
	}
	rest, ok := strings.CutPrefix(name, "uiod-")
	if !ok {
		return nil, fmt.Errorf("forwarder %q: want kernel, testpmd or uiod-POLICY[-generic] (POLICY busy, adaptive, adaptive@DURATION or auto)", name)
	}
	policy, mode := rest, "native"
	if p, ok := strings.CutSuffix(rest, "-generic"); ok {
		policy, mode = p, "generic"
	}
	poll, err := testutil.PollSection(policy, fmt.Sprint(forwarderCPU))
	if err != nil {
		return nil, fmt.Errorf("forwarder %q: %w", name, err)
	}
	cfg := filepath.Join(dir, "uiod.yaml")
	yaml := fmt.Sprintf(`state_dir: %s
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: p, driver: af_xdp, interface: vethB, rx_ring: 512, tx_ring: 512, xdp: {mode: %s}}
forward: {mode: reflect}
poll: %s
`, filepath.Join(dir, "state"), mode, poll)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return testutil.StartProc(t, dir, name, "ip", "netns", "exec", r.f, r.uiod, "run", "--config", cfg), nil
}
