package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builds holds one *build per package built by GoBuild in this test process.
var builds sync.Map

type build struct {
	once sync.Once
	path string
	err  error
}

// GoBuild builds the command pkg (a package path as `go build` takes it, relative to the
// test's directory or an import path) once per test process, and returns the binary's
// path. A failed build fails t with the compiler's output.
func GoBuild(t testing.TB, pkg string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(pkg, new(build))
	b := v.(*build)
	b.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "testutil-bin-")
		if err != nil {
			b.err = err
			return
		}
		name := filepath.Base(pkg)
		if name == "." || name == ".." {
			name = "cmd"
		}
		b.path = filepath.Join(dir, name)
		if out, err := exec.Command(goBin, "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = errors.New(err.Error() + "\n" + string(out))
		}
	})
	if b.err != nil {
		t.Fatalf("build %s: %v", pkg, b.err)
	}
	return b.path
}
