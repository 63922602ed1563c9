package pci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzContainedPath: whatever the relative path, a resolved path is inside the root, and
// so is whatever it leads to, in a tree with symlinks that stay inside and ones that climb
// out or are absolute.
func FuzzContainedPath(f *testing.F) {
	base := f.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{"sys/bus/pci/devices", "sys/devices/pci0000:00/0000:00:01.0", "run"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(base, "outside"), []byte("x"), 0o644)
	links := map[string]string{
		"sys/bus/pci/devices/0000:00:01.0": "../../../devices/pci0000:00/0000:00:01.0",
		"run/up":                           "../..",
		"run/abs":                          "/etc",
		"run/loop":                         "loop",
		"run/out":                          "../../outside",
		"run/in":                           "../sys",
	}
	for l, t := range links {
		os.Symlink(t, filepath.Join(root, l))
	}
	for _, s := range []string{"/../../x", "sys/bus/pci/devices/0000:00:01.0/config", "run/up/x", "run/abs/passwd",
		"run/loop/x", "run/out", "run/in/../../..", "a/b/../../..", "/run/uiod", ""} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, rel string, follow bool) {
		if strings.IndexByte(rel, 0) >= 0 {
			return
		}
		p, err := containedPath(root, rel, follow)
		if err != nil {
			return
		}
		inside := func(p string) bool {
			r, err := filepath.Rel(root, p)
			return err == nil && r != ".." && !strings.HasPrefix(r, "../")
		}
		if !inside(p) {
			t.Fatalf("containedPath(%q) = %q, outside %s", rel, p, root)
		}
		if !follow {
			return
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && !inside(real) {
			rr, _ := filepath.EvalSymlinks(root)
			if r, err := filepath.Rel(rr, real); err != nil || strings.HasPrefix(r, "..") {
				t.Fatalf("containedPath(%q) = %q leads to %q, outside the root", rel, p, real)
			}
		}
	})
}
