package qemutest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// goTool returns the go command: from PATH, else the usual install location.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// goBuild runs the go command in the repository root with cgo off and a stripped, trimmed
// static binary as the result; a failure fails t with the compiler's output.
func goBuild(t testing.TB, args ...string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
}

// BuildUIOD builds ./cmd/uiod as a static binary into a temporary directory of t and returns
// its path.
func BuildUIOD(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "uiod")
	goBuild(t, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/uiod")
	return out
}

// BuildTest compiles the tests of pkg (a path relative to the repository root, such as
// "./integration/guest") into a static test binary in a temporary directory of t and returns
// its path.
func BuildTest(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+".test")
	goBuild(t, "test", "-c", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	return out
}

// Binary returns the initramfs entry that installs the host executable at path as
// /bin/name in the guest.
func Binary(name, path string) Entry {
	return Entry{Name: "bin/" + name, Mode: ModeRegular | 0o755, Source: path}
}

// File returns the initramfs entry that installs the host file at path as name (a path
// without the leading '/') in the guest, readable by all.
func File(name, path string) Entry {
	return Entry{Name: name, Mode: ModeRegular | 0o644, Source: path}
}
