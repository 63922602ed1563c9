package afxdp

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/uiod/uiod/internal/testutil"
)

// uiodProc is a `uiod run` in the rig's namespace m.
type uiodProc struct {
	cmd    *exec.Cmd
	log    *testutil.Lines
	exited <-chan struct{}
}

// uiodConfig is a configuration forwarding between the rig's two ends in m.
func (r *rig) uiodConfig(t *testing.T, mode, policy string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	text := "metrics: {listen: \"\"}\nstate_dir: " + t.TempDir() + "\npoll: {mode: " + policy + "}\nports:\n" +
		"  - {name: a, driver: af_xdp, interface: " + r.ma + ", rx_ring: 512, tx_ring: 512, xdp: {mode: " + mode + "}}\n" +
		"  - {name: b, driver: af_xdp, interface: " + r.mb + ", rx_ring: 512, tx_ring: 512, xdp: {mode: " + mode + "}}\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startUIOD runs uiod with cfg in m and waits (at most 30 s) for its dataplane.
func (r *rig) startUIOD(t *testing.T, cfg string) *uiodProc {
	t.Helper()
	bin := testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
	u := &uiodProc{cmd: exec.Command("ip", "netns", "exec", r.m, bin, "run", "--config", cfg), log: new(testutil.Lines)}
	stderr, err := u.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.cmd.Process.Kill(); u.cmd.Wait() })
	var running <-chan struct{}
	running, u.exited = u.log.Follow(stderr, "dataplane running")
	select {
	case <-running:
	case <-u.exited:
		t.Fatalf("uiod exited:\n%s", u.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("uiod did not start:\n%s", u.log.String())
	}
	return u
}

// cpuTime is the process's user and system time from /proc/PID/stat.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ
}

// TestDaemonL2fwdAndKill: uiod run forwards ping and a checksummed 1 MiB TCP transfer
// between two af_xdp ports, sleeps when idle (adaptive), and once killed with SIGKILL
// leaves no XDP program on either interface.
func TestDaemonL2fwdAndKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs uiod")
	}
	for _, mode := range []string{"native", "generic"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t)
			u := r.startUIOD(t, r.uiodConfig(t, mode, "adaptive"))
			if !strings.Contains(u.log.String(), "af_xdp "+mode+" copy") && !strings.Contains(u.log.String(), "\"attach\": \""+mode+"\"") {
				t.Errorf("log does not say the attach mode %s:\n%s", mode, u.log.String())
			}
			if rtts := r.ping(t, 5, 2*time.Second); len(rtts) < 4 {
				t.Fatalf("%d of 5 pings through uiod:\n%s", len(rtts), u.log.String())
			}
			r.transfer(t, 1<<20)
			time.Sleep(300 * time.Millisecond)
			pid := u.cmd.Process.Pid
			c0, w0 := cpuTime(t, pid), time.Now()
			time.Sleep(2 * time.Second)
			idle := float64(cpuTime(t, pid)-c0) / float64(time.Since(w0))
			t.Logf("%s: idle CPU of uiod (adaptive) %.2f %% of a core", mode, 100*idle)
			if idle > 0.25 {
				t.Errorf("idle uiod used %.0f %% of a core: adaptive did not sleep", 100*idle)
			}
			if rtts := r.ping(t, 1, 2*time.Second); len(rtts) != 1 {
				t.Fatal("the first ping after idleness was not answered")
			}
			if r.xdpProg(t, r.ma) == "" || r.xdpProg(t, r.mb) == "" {
				t.Fatal("no XDP program attached while uiod runs")
			}
			u.cmd.Process.Signal(syscall.SIGKILL)
			<-u.exited
			u.cmd.Wait()
			if !waitFor(func() bool { return r.xdpProg(t, r.ma) == "" && r.xdpProg(t, r.mb) == "" }) {
				t.Fatalf("after kill -9: %s %q, %s %q", r.ma, r.xdpProg(t, r.ma), r.mb, r.xdpProg(t, r.mb))
			}
		})
	}
}

// TestDaemonRefusesBusyInterface: uiod run on an interface with another program exits 2
// naming it, and leaves it attached.
func TestDaemonRefusesBusyInterface(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs uiod")
	}
	r := newRig(t)
	prog := otherProgram(t)
	var lk link.Link
	if err := testutil.InNetns(r.m, func() error {
		l, err := netlink.LinkByName(r.mb)
		if err != nil {
			return err
		}
		lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.Attrs().Index, Flags: link.XDPGenericMode})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	before := r.xdpProg(t, r.mb)
	bin := testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
	out, err := exec.Command("ip", "netns", "exec", r.m, bin, "run", "--config", r.uiodConfig(t, "auto", "adaptive")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("uiod run: %v, want exit 2:\n%s", err, out)
	}
	if !strings.Contains(string(out), "port b: af_xdp "+r.mb+": interface already has an XDP program") || !strings.Contains(string(out), "someone_else") {
		t.Fatalf("error does not name the interface and program:\n%s", out)
	}
	if r.xdpProg(t, r.ma) != "" || r.xdpProg(t, r.mb) != before {
		t.Fatalf("after the refusal: %s %q, %s %q (was %q)", r.ma, r.xdpProg(t, r.ma), r.mb, r.xdpProg(t, r.mb), before)
	}
}
