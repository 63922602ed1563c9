package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestDebUnitStarts builds a fresh package with `make deb`, extracts it into a scratch
// root and runs its uiod.service as systemd would start it with the packaged
// configuration: the runtime directory, each ExecStartPre= line (each must exit 0: the
// packaged configuration has only sim ports, so bind binds nothing and says what to
// edit), then ExecStart= with $NOTIFY_SOCKET on an abstract socket, which must report
// READY=1; SIGTERM (the unit's KillSignal) must bring STOPPING=1 and exit 0; then each
// ExecStopPost= line must exit 0. The environment is what /etc/default/uiod would set:
// UIOD_CONFIG naming the packaged file inside the scratch root, UIOD_ROOT the scratch
// root (state_dir /run/uiod is then inside it), and metrics on an ephemeral port.
func TestDebUnitStarts(t *testing.T) {
	for _, tool := range []string{"dpkg-deb", "make", "gzip", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: the package cannot be built and unpacked here", tool)
		}
	}
	out := t.TempDir()
	build := exec.Command("make", "-s", "--no-print-directory", "-C", "..", "deb", "GO="+goTool(t))
	build.Env = append(os.Environ(), "OUT="+out, "VERSION=9.8.7~unit")
	b, err := build.Output()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, stderrOf(err))
	}
	deb := lastLine(string(b))
	root := t.TempDir()
	if o, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", deb, err, o)
	}
	bin := filepath.Join(root, "usr/bin/uiod")
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(v), "uiod 9.8.7~unit (revision ") {
		t.Errorf("uiod --version of the package: %q, %v; want the package version stamped", v, err)
	}
	kv := unitEntries(t, filepath.Join(root, "lib/systemd/system/uiod.service"))
	if got := values(kv, "Type"); len(got) != 1 || got[0] != "notify" {
		t.Fatalf("Type=%v, want notify", got)
	}
	env := unitEnv(kv, "")
	env["UIOD_CONFIG"] = filepath.Join(root, "etc/uiod/uiod.yaml")
	env["UIOD_ROOT"] = root
	env["UIOD_METRICS_LISTEN"] = "127.0.0.1:0"
	environ := os.Environ()
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	command := func(line string) *exec.Cmd {
		args := execArgs(line, env)
		if args[0] != "/usr/bin/uiod" {
			t.Fatalf("%s runs %s: this test only has uiod", line, args[0])
		}
		c := exec.Command(bin, args[1:]...)
		c.Env = environ
		return c
	}
	for _, d := range values(kv, "RuntimeDirectory") {
		if err := os.MkdirAll(filepath.Join(root, "run", d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range values(kv, "ExecStartPre") {
		o, err := command(line).CombinedOutput()
		t.Logf("ExecStartPre=%s:\n%s", line, o)
		if err != nil {
			t.Fatalf("ExecStartPre=%s: %v\n%s", line, err, o)
		}
		if strings.Contains(line, " bind ") && !strings.Contains(string(o), "has no PCI ports") {
			t.Errorf("ExecStartPre=%s does not say that there is nothing to bind and what to edit:\n%s", line, o)
		}
	}

	sock, msgs := testutil.NotifySocket(t)
	start := values(kv, "ExecStart")
	if len(start) != 1 {
		t.Fatalf("ExecStart=%v, want one line", start)
	}
	run := command(start[0])
	run.Env = append(run.Env, "NOTIFY_SOCKET="+sock)
	log := &testutil.Lines{}
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill() })
	_, logDone := log.Follow(stderr, "")
	testutil.WaitNotify(t, msgs, "READY=1", 60*time.Second, log)
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.WaitNotify(t, msgs, "STOPPING=1", 60*time.Second, log)
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- run.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("ExecStart=%s after SIGTERM: %v\n%s", start[0], err, log)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("ExecStart=%s: no exit 60 s after SIGTERM\n%s", start[0], log)
	}
	for _, want := range []string{"uiod starting", "9.8.7~unit", "dataplane running", "stopped cleanly"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the daemon's log lacks %q:\n%s", want, log)
		}
	}
	for _, line := range values(kv, "ExecStopPost") {
		if o, err := command(line).CombinedOutput(); err != nil {
			t.Errorf("ExecStopPost=%s: %v\n%s", line, err, o)
		}
	}
}

// goTool is the go command running this test, for make's GO.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		p = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	return p
}

// lastLine is the last line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
