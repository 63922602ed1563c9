package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
