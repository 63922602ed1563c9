package vhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/sidebyside"
)

var flags = sidebyside.NewFlags(sidebyside.FlagSet{Prefix: "vhost", Rounds: 3, One: "back end", Subset: "backends", Many: "back ends",
	IdleWith: "client connected"})

// backends are measured in this order in the first round, rotated by one each round.
var backends = []string{"testpmd", "uiod-busy", "uiod-adaptive", "uiod-auto"}

// The back end polls on CPU 0 (testpmd's forwarding lcore, uiod's poll thread), the client
// forwards on CPU 1.
const (
	backendCPU = "0"
	clientCPU  = "1"
)

// bench is one run's fixed parts: the binaries, the namespace and a scratch directory.
type bench struct{ *sidebyside.Bench }

// TestVhostSideBySide measures, in one run, the round trip from a veth's far end through
// each back end to the same virtio-user client (testpmd macswap) and back, and the back
// end's process CPU while probed and while idle. It runs only with UIOD_VHOST_BENCH=1
// (bench/vhost/run.sh sets it), as root, with dpdk-testpmd and the af_packet PMD.
func TestVhostSideBySide(t *testing.T) {
	b := bench{sidebyside.Start(t, sidebyside.Setup{
		Gate: "UIOD_VHOST_BENCH", What: "the vhost-user side-by-side benchmark", Script: "bench/vhost/run.sh",
		Root: "network namespace, AF_PACKET, dpdk-testpmd", Netns: "uiod-vhb",
	})}
	b.Run(t, flags.Order(backends), sidebyside.Spec{
		Roles:      sidebyside.Roles{Contender: "back end", Peer: "client", Baseline: "testpmd"},
		Plan:       flags.Plan(0),
		Sockets:    []string{"vhost.sock"},
		SocketWait: 30 * time.Second,
		Start:      sidebyside.Starter(b.startBackend),
		StartPeer:  b.client,
		ReportEnv:  "UIOD_VHOST_REPORT",
	})
}

// client starts the virtio-user client on the back end's socket, on CPU 1, outside the
// namespace: testpmd macswap.
func (b bench) client(t *testing.T, dir string, socks []string) *proc {
	return b.StartTestpmd(t, dir, "client", false, fmt.Sprintf("uiodvhbc%d", os.Getpid()),
		[]string{"--lcores", "0@" + clientCPU + ",1@" + clientCPU, "--main-lcore=0", "--no-pci", "--no-huge", "-m", "512",
			"--vdev", "net_virtio_user0,path=" + socks[0] + ",queues=1"},
		[]string{"--forward-mode=macswap", "--total-num-mbufs=4096", "--nb-cores=1", "-a"})
}

// startBackend starts back end name in the namespace, serving the vhost-user socket (the
// one of socks) and bridging it to vethB.
func (b bench) startBackend(t *testing.T, name, dir string, socks []string) (*proc, error) {
	sock := socks[0]
	if name == "testpmd" {
		return b.StartTestpmd(t, dir, name, true, fmt.Sprintf("uiodvhbb%d", os.Getpid()),
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
	return b.UIODRun(t, dir, name, fmt.Sprintf(`state_dir: %s
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: nic, driver: sim, wire: "afpacket:vethB", promiscuous: true}
  - {name: vm, driver: vhost-user, socket: %s}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {%s, cpus: [%s]}
`, filepath.Join(dir, "state"), sock, poll, backendCPU))
}
