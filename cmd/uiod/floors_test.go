package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/uiod/uiod/"

// TestFloors keeps the house drawn from imports free of arrows running up (docs/design.md
// §2): internal/ is the ground floor and imports nothing of the project outside internal/;
// testrig/ holds the rigs that assemble the whole house to test it, and only test files
// import them; the pci seam and the drivers (nic/...) import nothing of the sysfs host tool
// (pci/pcihost and below).
func TestFloors(t *testing.T) {
	dirs, err := goDirs("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			imports, err := projectImports(f)
			if err != nil {
				t.Fatal(err)
			}
			test := strings.HasSuffix(f, "_test.go")
			for _, imp := range imports {
				n++
				if msg := floorRule(dir, imp, test); msg != "" {
					t.Errorf("%s imports %s: %s", filepath.Join(dir, filepath.Base(f)), imp, msg)
				}
			}
		}
	}
	t.Logf("%d project imports checked", n)
}

// TestFloorRule: the rule itself, on the cases it decides.
func TestFloorRule(t *testing.T) {
	for _, tt := range []struct {
		dir, imp string
		test     bool
		ok       bool
	}{
		{"internal/mmio", "internal/testutil", false, true},
		{"internal/mmio", "nic", false, false},
		{"internal/hw/i82599", "internal/hw/intelnic", false, true},
		{"internal/tuntap", "dataplane", true, false},
		{"integration", "testrig/qemutest", true, true},
		{"daemon", "testrig/modelrig", true, true},
		{"daemon", "testrig/modelrig", false, false},
		{"testrig/soak", "testrig/modelrig", false, true},
		{"testrig/soak", "daemon", false, true},
		{"pci", "pci/pcihost", false, false},
		{"pci", "pci/pcihost/pcitest", true, false},
		{"nic/ixgbe", "pci/pcihost", false, false},
		{"nic/internal/nictest", "pci/pcihost/pcitest", true, false},
		{"nic/ixgbe", "pci", false, true},
		{"pci/pcihost", "pci", false, true},
		{"vfio", "pci/pcihost", false, true},
		{"daemon", "pci/pcihost/pcitest", true, true},
	} {
		if got := floorRule(tt.dir, tt.imp, tt.test) == ""; got != tt.ok {
			t.Errorf("floorRule(%s, %s, test=%v) allowed=%v, want %v", tt.dir, tt.imp, tt.test, got, tt.ok)
		}
	}
}

// floorRule returns why dir may not import imp (both relative to the module), or "".
func floorRule(dir, imp string, test bool) string {
	under := func(p, base string) bool { return p == base || strings.HasPrefix(p, base+"/") }
	switch {
	case under(dir, "internal") && !under(imp, "internal"):
		return "internal/ is the ground floor and imports only internal/"
	case under(imp, "testrig") && !under(dir, "testrig") && !test:
		return "testrig/ packages are test rigs: only test files import them"
	case under(imp, "pci/pcihost") && under(dir, "pci") && !under(dir, "pci/pcihost"):
		return "pci is the drivers' seam and imports nothing of the host tool pci/pcihost"
	case under(imp, "pci/pcihost") && under(dir, "nic"):
		return "a driver (nic/...) sees a function through the pci seam, never through the host tool pci/pcihost"
	}
	return ""
}

// projectImports returns the module-relative paths of the project packages file imports.
func projectImports(file string) ([]string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			return nil, err
		}
		if rel, ok := strings.CutPrefix(p, modulePath); ok {
			out = append(out, rel)
		}
	}
	return out, nil
}
