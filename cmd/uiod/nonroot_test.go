package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
		for _, want := range []string{"state_dir", "not root", "UIOD_STATE_DIR", "XDG_RUNTIME_DIR"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("error lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("XDG_RUNTIME_DIR", func(t *testing.T) {
		c := exec.Command(bin, "run", "--config", cfg)
		c.Env = env("XDG_RUNTIME_DIR=" + xdg)
		asUser(c)
		stderr, err := c.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		running := make(chan string, 1)
		go func() {
			var log strings.Builder
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "dataplane running") {
					running <- log.String()
					io.Copy(io.Discard, stderr)
					return
				}
			}
			running <- log.String()
		}()
		var log string
		select {
		case log = <-running:
		case <-time.After(30 * time.Second):
			t.Fatal("uiod run did not start within 30 s")
		}
		if !strings.Contains(log, "dataplane running") {
			t.Fatalf("uiod run as a user exited:\n%s", log)
		}
		pid := filepath.Join(xdg, "uiod", "uiod.pid")
		if _, err := os.Stat(pid); err != nil {
			t.Errorf("no pid file in $XDG_RUNTIME_DIR/uiod: %v\n%s", err, log)
		}
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no exit 60 s after SIGTERM")
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
