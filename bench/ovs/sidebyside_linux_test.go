package ovs

import (
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
	"github.com/uiod/uiod/testrig/sidebyside"
)

var (
	flags = sidebyside.NewFlags(sidebyside.FlagSet{Prefix: "ovs", Rounds: 3, One: "switch", Subset: "switches", Many: "switches",
		IdleWith: "front ends connected"})
	settle = flag.Duration("ovs.settle", 5*time.Second, "wait after the first probes come back, before a discarded warm-up at the probes' rate")
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

// bench is one run's fixed parts: the shared ones and OVS's tools and huge pages.
type bench struct {
	*sidebyside.Bench
	hugeDir string
	ovs     map[string]string // ovsdb-tool, ovsdb-server, ovs-vsctl, ovs-ofctl
}

// TestOVSSideBySide measures, in one run, the round trip from a veth's far end through
// one DPDK testpmd front end (virtio-user), across each switch between two vhost-user
// ports, to a second virtio-user port of the same testpmd and back out of the veth; and
// the switch's process CPU while probed and while idle. It runs only with UIOD_OVS_BENCH=1
// (bench/ovs/run.sh sets it), as root, with OVS-DPDK, dpdk-testpmd and huge pages.
func TestOVSSideBySide(t *testing.T) {
	b := &bench{ovs: map[string]string{}}
	b.Bench = sidebyside.Start(t, sidebyside.Setup{
		Gate: "UIOD_OVS_BENCH", What: "the OVS-DPDK side-by-side benchmark", Script: "bench/ovs/run.sh",
		Root: "huge pages, network namespace, AF_PACKET, ovs-vswitchd, dpdk-testpmd", Netns: "uiod-ovs",
		Needs: func(t *testing.T, dir string) {
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
			if b.hugeDir, err = reserveHugepages(t, hugepages, dir); err != nil {
				t.Skip("no huge pages for OVS-DPDK: ", err)
			}
		},
	})
	b.Run(t, flags.Order(switches), sidebyside.Spec{
		Roles: sidebyside.Roles{Contender: "switch", Peer: "front end", Baseline: baseline, FineRatios: true,
			Goal: &sidebyside.Goal{Text: "The issue's goal (idle CPU ≤ 0.1× OVS-DPDK's at p50 ≤ 1.1× its):", IdleMax: 0.1, P50Max: 1.1}},
		Plan:       flags.Plan(*settle),
		Sockets:    []string{"vhA", "vhB"},
		SocketWait: 60 * time.Second,
		Start:      sidebyside.Starter(b.startSwitch),
		StartPeer:  b.frontEnd,
		ReportEnv:  "UIOD_OVS_REPORT",
	})
}

// baseline is the switch every other is compared with.
const baseline = "ovs-dpdk"

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

func (s *sw) Sched() (testutil.Sched, error) { return s.main.Sched() }
func (s *sw) Tail(lines int) string          { return s.main.Tail(lines) }

// frontEnd starts the one testpmd that is both front ends, in the namespace on CPU 1:
// ports 0 and 1 are virtio-user on the switch's sockets A and B, port 2 is af_packet on
// vethB. Chained io forwarding (0→1, 1→2, 2→0) sends what comes in on vethB into the
// switch at A and what the switch delivers at B back out of vethB: a probe crosses the
// switch once, A to B, unchanged.
func (b *bench) frontEnd(t *testing.T, dir string, socks []string) *proc {
	return b.StartTestpmd(t, dir, "front-end", true, fmt.Sprintf("uiodovsfe%d", os.Getpid()),
		[]string{"--lcores", "0@" + frontCPU + ",1@" + frontCPU, "--main-lcore=0", "--no-pci", "--no-huge", "-m", "512",
			"--vdev", "net_virtio_user0,path=" + socks[0] + ",queues=1",
			"--vdev", "net_virtio_user1,path=" + socks[1] + ",queues=1",
			"--vdev", "net_af_packet0,iface=vethB"},
		[]string{"--forward-mode=io", "--port-topology=chained", "--total-num-mbufs=8192", "--nb-cores=1", "-a"})
}

// startSwitch starts switch name serving the vhost-user sockets socks.
func (b *bench) startSwitch(t *testing.T, name, dir string, socks []string) (*sw, error) {
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
	p, err := b.UIODRun(t, dir, name, fmt.Sprintf(`state_dir: %s
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: a, driver: vhost-user, socket: %s}
  - {name: b, driver: vhost-user, socket: %s}
forward: {mode: bridge}
poll: %s
`, filepath.Join(dir, "state"), socks[0], socks[1], poll))
	if err != nil {
		return nil, err
	}
	return &sw{main: p}, nil
}

// startOVS starts a private ovsdb-server and a DPDK ovs-vswitchd (its db, sockets, logs
// and run directory all in dir; its PMD thread on CPU 0; its huge pages from b.hugeDir),
// with one netdev bridge and two dpdkvhostuser ports whose sockets are socks. Switching is
// the NORMAL action (MAC learning), as uiod's bridge; the bridge's own internal port is
// kept out of floods.
func (b *bench) startOVS(t *testing.T, dir string, socks []string) (*sw, error) {
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
	s.main = testutil.StartProcEnv(t, dir, "ovs-vswitchd", env, "ip", "netns", "exec", b.NS, ovsVswitchdDPDK, "unix:"+dbSock,
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
