package pcihost

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
)

func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0x8086\n", "0x020000\n", "zz", "", "0x", "0X1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, digits := range []int{2, 4, 6} {
			v, err := pci.ParseHex(b, digits)
			if err != nil {
				if !errors.Is(err, pci.ErrMalformed) {
					t.Fatalf("error %v is not ErrMalformed", err)
				}
				continue
			}
			if v >= 1<<(4*digits) {
				t.Fatalf("ParseHex(%q, %d) = %#x, too wide", b, digits, v)
			}
		}
		if c, err := parseClass(b); err == nil {
			var back pci.Class
			if err := back.UnmarshalText([]byte(c.String())); err != nil || back != c {
				t.Fatalf("class %q round trip: %v %v", c, back, err)
			}
		}
		parseInt(b)
	})
}

func FuzzRoutes(f *testing.F) {
	f.Add([]byte("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"))
	f.Add([]byte("20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth5\n"))
	f.Add([]byte("Iface\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte, map[string]bool) error{parseIPv4Routes, parseIPv6Routes} {
			active := map[string]bool{}
			err := parse(b, active)
			if err != nil && !errors.Is(err, pci.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			for name := range active {
				if name == "" {
					t.Fatal("empty interface name")
				}
			}
		}
	})
}

func FuzzState(f *testing.F) {
	f.Add([]byte(`{"address":"0000:03:00.0","driver":"igb","driver_override":"","bound_to":"vfio-pci"}`))
	f.Add([]byte(`{"address":"0000:03:00.0","driver":"../../etc"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		h, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		a := pci.MustParseAddr("0000:03:00.0")
		if err := h.saveState(BindState{Addr: a}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.StatePath(a), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, ok, err := h.State(a)
		if err == nil && ok && s.Driver != "" && ValidDriverName(s.Driver) != nil {
			t.Fatalf("state accepted driver %q", s.Driver)
		}
	})
}

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
