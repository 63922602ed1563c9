package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

const runTestConfig = `
metrics: {listen: "127.0.0.1:0"}
ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
forward: {mode: l2fwd}
poll: {mode: adaptive}
`

// TestRunSignals: every shutdown signal (SIGQUIT too, not only SIGINT and SIGTERM;
// SIGHUP reloads, see TestRunReload) takes the ordered shutdown: the daemon closes each port (queues off,
// interrupts masked, bus mastering off, DMA freed) and exits 0.
func TestRunSignals(t *testing.T) {
	bin := uiodBinary(t)
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	if err := os.WriteFile(cfg, []byte(runTestConfig+"state_dir: "+t.TempDir()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemon(t, bin, cfg)
			start := time.Now()
			err := d.stop(t, sig)
			took := time.Since(start)
			log := d.log
			if err != nil {
				t.Fatalf("exit after %v: %v\n%s", sig, err, log.String())
			}
			t.Logf("%v → exit 0 in %v", sig, took)
			if sig == syscall.SIGQUIT && !strings.Contains(log.String(), "goroutine 1 [") {
				t.Errorf("SIGQUIT wrote no goroutine dump:\n%s", log.String())
			}
			testutil.TextContains(t, "log", log.String(), "shutting down", sig.String(), "dataplane stopped", "port closed\t{\"port\": \"a\"}", "port closed\t{\"port\": \"b\"}", "stopped cleanly")
		})
	}
}

// daemonProc is a uiod subprocess (`uiod run` for startDaemon), its standard error
// collected line by line.
type daemonProc struct {
	cmd    *exec.Cmd
	log    *testutil.Lines
	exited <-chan struct{} // closed when standard error closes: the process is gone
}

// startDaemon starts `bin run --config cfg` (each setup given the command first) and
// waits (at most 20 s) for it to log "dataplane running"; the process is killed when the
// test ends.
func startDaemon(t *testing.T, bin, cfg string, setup ...func(*exec.Cmd)) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", cfg)
	for _, f := range setup {
		f(cmd)
	}
	return startLogging(t, cmd, "dataplane running", 20*time.Second)
}

// startLogging starts cmd and waits (at most within) for a line of its standard error
// containing want; the process is killed when the test ends.
func startLogging(t *testing.T, cmd *exec.Cmd, want string, within time.Duration) *daemonProc {
	t.Helper()
	d := &daemonProc{cmd: cmd, log: new(testutil.Lines)}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill() })
	var seen <-chan struct{}
	seen, d.exited = d.log.Follow(stderr, want)
	select {
	case <-seen:
	case <-time.After(within):
		t.Fatalf("%q not logged within %v:\n%s", want, within, d.log.String())
	}
	return d
}

// stop sends sig and returns the process's exit error. A hang guard, not a timing
// assertion: only a shutdown that has not ended 60 s after sig fails the test.
func (d *daemonProc) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	return d.stopWithin(t, sig, 60*time.Second)
}

// stopWithin is stop with a hang guard of within.
func (d *daemonProc) stopWithin(t *testing.T, sig syscall.Signal, within time.Duration) error {
	t.Helper()
	d.cmd.Process.Signal(sig)
	select {
	case <-d.exited:
	case <-time.After(within):
		t.Fatalf("no exit %v after %v: shutdown hung\n%s", within, sig, d.log.String())
	}
	return d.cmd.Wait()
}

func TestRunBadConfig(t *testing.T) {
	bin := uiodBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(runTestConfig, "rx_ring", "rx_rnig", 1)+"\nports_x: 1\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no config flag", []string{"run"}, "--config"},
		{"missing file", []string{"run", "--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"unknown key", []string{"run", "--config", bad}, "ports_x"},
		{"extra arg", []string{"run", "--config", bad, "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(bin, tt.args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want 2\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output does not name %q:\n%s", tt.want, out)
			}
		})
	}
}

// TestRunReload: `kill -HUP` on `uiod run` re-reads the file: the new idle policy is
// applied, a ring change is logged as needing a restart (by its key) and the daemon goes
// on; a file that no longer validates is logged and ignored; SIGTERM still shuts down in
// order and exits 0. The startup log names the version.
func TestRunReload(t *testing.T) {
	bin := uiodBinary(t)
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	base := runTestConfig + "state_dir: " + t.TempDir() + "\n"
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(base, "mode: adaptive", "mode: busy", 1))
	d := startDaemon(t, bin, cfg)
	waitLog := func(want string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() bool { return strings.Contains(d.log.String(), want) },
			"the daemon's log never said "+want+":\n"+d.log.String())
	}
	testutil.TextContains(t, "startup log", d.log.String(), "uiod starting", `"version": "`+version+`"`)

	write(strings.Replace(base, `{name: a, driver: sim, wire: "pair:a"}`, `{name: a, driver: sim, wire: "pair:a", rx_ring: 1024}`, 1))
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("reload done")
	testutil.TextContains(t, "log", d.log.String(), "idle policy changed", "policy\": \"adaptive",
		"configuration change needs a restart", `"key": "ports[0].rx_ring"`)

	write(base + "poll: {mode: nap}\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("configuration refused, keeping the running one")
	testutil.TextContains(t, "log", d.log.String(), "poll.mode")

	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.log.String())
	}
	testutil.TextContains(t, "log", d.log.String(), "dataplane stopped", "stopped cleanly")
}

// TestRunKernelTapTaken: `uiod run` whose kernel.tap names an existing interface that is
// not a TAP exits 2 (configuration) with an error naming the interface, and leaves the
// host's interfaces as they were.
func TestRunKernelTapTaken(t *testing.T) {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	ns := testutil.Netns(t, "uiod-run-k")
	testutil.IPIn(t, ns, "link", "add", "uiodv0", "type", "veth", "peer", "name", "uiodv1")
	before := testutil.IPIn(t, ns, "-br", "link", "show")
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	text := `
metrics: {listen: ""}
state_dir: ` + t.TempDir() + `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: uiodka}}
  - {name: b, driver: sim, wire: "pair:b", kernel: {tap: uiodv0}}
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, uiodBinary(t), "run", "--config", cfg).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Fatalf("uiod run: %v, want exit %d:\n%s", err, exitUsage, out)
	}
	if !strings.Contains(string(out), "port b: kernel: tap uiodv0: interface uiodv0 exists and is a veth, not a TAP") {
		t.Fatalf("error does not name the interface:\n%s", out)
	}
	if after := testutil.IPIn(t, ns, "-br", "link", "show"); after != before {
		t.Fatalf("interfaces after the refused start:\n%s\nbefore:\n%s", after, before)
	}
}

// nobody is the user the non-root test runs uiod as when the test runs as root.
const nobody = 65534

// TestRunNonRoot: a model-only configuration that sets no state_dir runs as a user other
// than root, keeping its pid file in $XDG_RUNTIME_DIR/uiod; without $XDG_RUNTIME_DIR the
// error names state_dir and UIOD_STATE_DIR (exit 1). As root the test runs uiod as
// nobody; otherwise as the test's own user.
func TestRunNonRoot(t *testing.T) {
	dir, err := os.MkdirTemp("", "uiod-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "uiod")
	copyFile(t, uiodBinary(t), bin, 0o755)
	cfg := filepath.Join(dir, "uiod.yaml")
	if err := os.WriteFile(cfg, []byte(runTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	asUser := func(c *exec.Cmd) {}
	if os.Geteuid() == 0 {
		for _, p := range []string{dir, xdg} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(xdg, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(xdg, 0o700); err != nil {
			t.Fatal(err)
		}
		asUser = func(c *exec.Cmd) {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
	}
	env := func(extra ...string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "UIOD_") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
				out = append(out, kv)
			}
		}
		return append(out, extra...)
	}

	t.Run("no XDG_RUNTIME_DIR", func(t *testing.T) {
		c := exec.Command(bin, "run", "--config", cfg)
		c.Env = env()
		asUser(c)
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit %v, want 1:\n%s", err, out)
		}
		testutil.TextContains(t, "error", string(out), "state_dir", "not root", "UIOD_STATE_DIR", "XDG_RUNTIME_DIR")
	})
	t.Run("XDG_RUNTIME_DIR", func(t *testing.T) {
		d := startDaemon(t, bin, cfg, asUser, func(c *exec.Cmd) { c.Env = env("XDG_RUNTIME_DIR=" + xdg) })
		if _, err := os.Stat(filepath.Join(xdg, "uiod", "uiod.pid")); err != nil {
			t.Errorf("no pid file in $XDG_RUNTIME_DIR/uiod: %v\n%s", err, d.log.String())
		}
		if err := d.stop(t, syscall.SIGTERM); err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, d.log.String())
		}
	})
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
