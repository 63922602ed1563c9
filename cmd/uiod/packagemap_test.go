package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPackageMap keeps the README's package map, the one map of the tree, in step with it:
// every directory with Go source is named in the Layout table (itself, or a `DIR/...`
// entry above it), and every directory the table names exists.
func TestPackageMap(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := packageMap(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join("../..", strings.TrimSuffix(e, "/..."))); err != nil || !fi.IsDir() {
			t.Errorf("README's Layout names %s, which is not a directory of the tree", e)
		}
	}
	dirs, err := goDirs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !mapCovers(entries, d) {
			t.Errorf("%s has Go source but README's Layout table does not name it", d)
		}
	}
	t.Logf("%d entries of the map, %d directories with Go source", len(entries), len(dirs))
}

// TestPackageMapParse: the map is read from the Layout table's first column only.
func TestPackageMapParse(t *testing.T) {
	doc := "# x\n| `a` | see `not/this` |\n## Layout\ntext `nor/this`\n\n| package | what |\n|---|---|\n| `cmd/x`, `nic/...` | uses `y/z` |\n| `pci` | p |\n\n## Next\n| `q` | r |\n"
	got, err := packageMap(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cmd/x", "nic/...", "pci"}; !slices.Equal(got, want) {
		t.Fatalf("packageMap = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		dir  string
		want bool
	}{{"cmd/x", true}, {"cmd/x/y", false}, {"nic", true}, {"nic/a/b", true}, {"pci/t", false}, {"nicx", false}} {
		if got := mapCovers([]string{"cmd/x", "nic/...", "pci"}, tt.dir); got != tt.want {
			t.Errorf("mapCovers(%s) = %v, want %v", tt.dir, got, tt.want)
		}
	}
	if _, err := packageMap("# no layout\n"); err == nil {
		t.Error("a README without a Layout table: no error")
	}
}

var mapCell = regexp.MustCompile("`([^`]+)`")

// packageMap returns the package paths in the first column of the table under "## Layout".
func packageMap(readme string) ([]string, error) {
	_, after, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return nil, os.ErrNotExist
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	var out []string
	for _, line := range strings.Split(after, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, m := range mapCell.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		return nil, os.ErrNotExist
	}
	return out, nil
}

// mapCovers reports whether dir is an entry or lies under a `DIR/...` entry.
func mapCovers(entries []string, dir string) bool {
	for _, e := range entries {
		if e == dir {
			return true
		}
		if base, ok := strings.CutSuffix(e, "/..."); ok && (dir == base || strings.HasPrefix(dir, base+"/")) {
			return true
		}
	}
	return false
}

// goDirs lists the directories under root (relative, slash-separated) holding .go files,
// leaving out hidden directories and testdata.
func goDirs(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs, err
}
