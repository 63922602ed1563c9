package sidebyside

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// Setup is what Start checks and says when it skips.
type Setup struct {
	Gate   string // the environment variable that must be "1" for the bench to run
	What   string // the bench, for the skip message: "the OVS-DPDK side-by-side benchmark"
	Script string // the script that runs it by hand
	Root   string // what root is needed for
	Netns  string // the namespace's name
	// Needs, if set, checks (and skips t without) the bench's own tools and resources once
	// the common ones are there, with the run's scratch directory.
	Needs func(t *testing.T, dir string)
}

// Bench is one run's fixed parts: the binaries, the namespace and a scratch directory.
type Bench struct {
	UIOD, Testpmd, NS, Dir string
}

// Start skips t unless the bench was asked for, runs as root and finds dpdk-testpmd and
// DPDK's af_packet PMD (and what s.Needs checks); then builds uiod and makes the network
// namespace with the veth pair vethA/vethB up and IPv6 off.
func Start(t *testing.T, s Setup) *Bench {
	t.Helper()
	if os.Getenv(s.Gate) != "1" {
		t.Skipf("%s runs by hand: %s", s.What, s.Script)
	}
	if os.Geteuid() != 0 {
		t.Skipf("needs root (%s)", s.Root)
	}
	b := &Bench{}
	var err error
	if b.Testpmd, err = exec.LookPath("dpdk-testpmd"); err != nil {
		t.Skip("dpdk-testpmd not installed (apt-get install dpdk): ", err)
	}
	if AFPacketPMD() == "" {
		t.Skip("DPDK's af_packet PMD (librte_net_af_packet.so) not found under /usr/lib/*/dpdk")
	}
	b.Dir = t.TempDir()
	if s.Needs != nil {
		s.Needs(t, b.Dir)
	}
	b.UIOD = qemutest.BuildUIOD(t)
	b.NS = testutil.Netns(t, s.Netns)
	testutil.Sysctl(t, b.NS, "net.ipv6.conf.all.disable_ipv6", "1")
	testutil.Sysctl(t, b.NS, "net.ipv6.conf.default.disable_ipv6", "1")
	testutil.IPIn(t, b.NS, "link", "add", "vethA", "type", "veth", "peer", "name", "vethB")
	for _, l := range []string{"lo", "vethA", "vethB"} {
		testutil.IPIn(t, b.NS, "link", "set", l, "up")
	}
	return b
}

// AFPacketPMD is the path of DPDK's af_packet PMD plugin, or "".
func AFPacketPMD() string {
	for _, pat := range []string{"/usr/lib/*/dpdk/pmds-*/librte_net_af_packet.so*", "/usr/lib/*/librte_net_af_packet.so*"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// Latency runs `uiod latency` in the namespace: count probes gap apart out of vethA, back
// into it; it returns the report and uiod's output.
func (b *Bench) Latency(dir, label string, count int, gap, timeout time.Duration) (qemutest.LatencyReport, string, error) {
	var rep qemutest.LatencyReport
	js := filepath.Join(dir, label+".json")
	os.Remove(js)
	out, err := exec.Command("ip", "netns", "exec", b.NS, b.UIOD, "latency", "--tx", "afpacket:vethA",
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

// StartTestpmd starts dpdk-testpmd as name with its EAL arguments eal (--file-prefix=PREFIX
// added) and its own arguments args, in the namespace if inNS.
func (b *Bench) StartTestpmd(t *testing.T, dir, name string, inNS bool, prefix string, eal, args []string) *testutil.Proc {
	t.Helper()
	argv := []string{b.Testpmd}
	if inNS {
		argv = []string{"ip", "netns", "exec", b.NS, b.Testpmd}
	}
	argv = append(append(append(argv, eal...), "--file-prefix="+prefix, "--"), args...)
	p := testutil.StartProc(t, dir, name, argv...)
	p.RunDir = filepath.Join("/var/run/dpdk", prefix)
	return p
}

// UIODRun starts `uiod run` as name in the namespace with the configuration yaml, written to
// dir/uiod.yaml.
func (b *Bench) UIODRun(t *testing.T, dir, name, yaml string) (*testutil.Proc, error) {
	cfg := filepath.Join(dir, "uiod.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return testutil.StartProc(t, dir, name, "ip", "netns", "exec", b.NS, b.UIOD, "run", "--config", cfg), nil
}
