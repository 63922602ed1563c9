package afxdp

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	inEachMode(t, func(t *testing.T, r *rig, mode string) {
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

// TestDaemonRefusesBusyInterface: uiod run on an interface with another program exits 2
// naming it, and leaves it attached.
func TestDaemonRefusesBusyInterface(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs uiod")
	}
	r := newRig(t)
	prog := otherProgram(t)
	lk := r.attachOther(t, r.mb, prog)
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

// portState is what the deletion test reads of a port in uiod's /status.
type portState struct {
	Name    string `json:"name"`
	Absent  bool   `json:"absent"`
	LinkUp  bool   `json:"link_up"`
	Reopens uint64 `json:"reopens"`
}

var metricsAddr = regexp.MustCompile(`metrics endpoint.*?(127\.0\.0\.1:[0-9]+)`)

// status reads uiod's /status in m (its metrics endpoint listens on m's loopback, at
// the address its log names).
func (u *uiodProc) status(t *testing.T, ns string) map[string]portState {
	t.Helper()
	m := metricsAddr.FindStringSubmatch(u.log.String())
	if m == nil {
		t.Fatalf("no metrics endpoint in the log:\n%s", u.log.String())
	}
	var body []byte
	err := testutil.InNetns(ns, func() error {
		c, err := net.DialTimeout("tcp", m[1], 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /status HTTP/1.0\r\nHost: uiod\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err
	})
	if err != nil {
		t.Fatalf("GET /status in %s: %v", ns, err)
	}
	var st struct {
		Ports []portState `json:"ports"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/status: %v: %s", err, body)
	}
	ps := make(map[string]portState)
	for _, p := range st.Ports {
		ps[p.Name] = p
	}
	return ps
}

// waitStatus polls /status every 50 ms, for up to 15 s, until cond holds of port name.
func (u *uiodProc) waitStatus(t *testing.T, ns, name string, cond func(portState) bool) (portState, bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := u.status(t, ns)[name]
		if cond(p) || time.Now().After(deadline) {
			return p, cond(p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDaemonInterfaceReturns: under a flood of pings, one port's interface is deleted:
// the port is absent in /status and the other keeps running; the interface is made again
// (a new ifindex) and the port is re-opened on it, program attached, and pings go
// through uiod again.
func TestDaemonInterfaceReturns(t *testing.T) {
	inEachMode(t, func(t *testing.T, r *rig, mode string) {
		cfg := r.uiodConfig(t, mode, "adaptive")
		text, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(strings.Replace(string(text), `listen: ""`, `listen: "127.0.0.1:0"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		u := r.startUIOD(t, cfg)
		if rtts := r.ping(t, 5, 2*time.Second); len(rtts) < 4 {
			t.Fatalf("%d of 5 pings through uiod before the deletion:\n%s", len(rtts), u.log.String())
		}
		stop := make(chan struct{})
		flood := r.pingFlood(t, 5*time.Millisecond, stop)
		defer func() { close(stop); <-flood }()
		time.Sleep(200 * time.Millisecond)

		mac := r.macB(t)
		testutil.IPIn(t, r.m, "link", "del", r.mb)
		if p, ok := u.waitStatus(t, r.m, "b", func(p portState) bool { return p.Absent && !p.LinkUp }); !ok {
			t.Fatalf("interface %s deleted: port b %+v, want absent:\n%s", r.mb, p, u.log.String())
		}
		if p := u.status(t, r.m)["a"]; p.Absent {
			t.Fatalf("port a absent too: %+v", p)
		}
		time.Sleep(300 * time.Millisecond) // absent for a while under traffic
		r.recreateB(t, mac)
		if p, ok := u.waitStatus(t, r.m, "b", func(p portState) bool { return !p.Absent && p.Reopens == 1 }); !ok {
			t.Fatalf("interface %s back: port b %+v, want re-opened once:\n%s", r.mb, p, u.log.String())
		}
		if r.xdpProg(t, r.mb) == "" {
			t.Fatalf("port b re-opened but no XDP program on the new %s", r.mb)
		}
		if rtts := r.ping(t, 5, 2*time.Second); len(rtts) < 4 {
			t.Fatalf("%d of 5 pings through uiod after the re-open:\n%s", len(rtts), u.log.String())
		}
		r.transfer(t, 256<<10)
		select {
		case <-u.exited:
			t.Fatalf("uiod exited:\n%s", u.log.String())
		default:
		}
		t.Logf("%s: port b gone and back; log:\n%s", mode, grepLines(u.log.String(), "interface deleted", "re-opened", "re-open"))
	})
}

// grepLines returns the lines of s that contain one of words.
func grepLines(s string, words ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// inEachMode runs test, which builds and runs uiod (skipped in -short), as a subtest for
// each attach mode, native and generic, each on a rig of its own.
func inEachMode(t *testing.T, test func(t *testing.T, r *rig, mode string)) {
	if testing.Short() {
		t.Skip("builds and runs uiod")
	}
	for _, mode := range []string{"native", "generic"} {
		t.Run(mode, func(t *testing.T) { test(t, newRig(t), mode) })
	}
}
