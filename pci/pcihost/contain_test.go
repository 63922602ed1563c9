package pcihost_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// resolvers runs f with the kernel's openat2 resolution and with the fallback walk.
func resolvers(t *testing.T, f func(t *testing.T)) {
	for _, on := range []bool{true, false} {
		name := "openat2"
		if !on {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			pcihost.SetOpenat2(on)
			defer pcihost.SetOpenat2(true)
			f(t)
		})
	}
}

func TestNewHostEmptyRoot(t *testing.T) {
	if _, err := pcihost.New(""); err == nil {
		t.Error(`New("") succeeded; want an error (use "/")`)
	}
	if _, err := pcihost.New(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("New of a missing directory succeeded")
	}
	// The root is kept absolute and clean; "/" is the host itself.
	dir := t.TempDir()
	for root, want := range map[string]string{"/": "/", dir + "/.": dir, dir + "//": dir} {
		if h, err := pcihost.New(root); err != nil || h.Root() != want {
			t.Errorf("New(%q) = %v, %v; want root %s", root, h, err, want)
		}
	}
}

// TestPathStaysInRoot: ".." and symlinks never lead a host path out of the root.
func TestPathStaysInRoot(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tr := pcitest.New(t)
		outside := t.TempDir()
		os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
		os.Symlink(outside, tr.Path("abs"))
		rel, _ := filepath.Rel(tr.Root, outside)
		os.Symlink(rel, tr.Path("climb"))
		os.Symlink("../..", tr.Path("run/up"))
		os.Mkdir(tr.Path("in"), 0o755)
		os.WriteFile(tr.Path("in/file"), []byte("ok"), 0o644)
		os.Symlink("../in", tr.Path("run/in"))
		h, err := pcihost.New(tr.Root)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/../../x", "../x", "abs/secret", "climb/secret", "run/up/x", "sys/../../x"} {
			if got, err := h.Path(p); !errors.Is(err, pcihost.ErrOutsideRoot) {
				t.Errorf("Path(%q) = %q, %v; want ErrOutsideRoot", p, got, err)
			}
			if f, err := h.OpenFile(p, os.O_RDONLY, 0); !errors.Is(err, pcihost.ErrOutsideRoot) {
				if f != nil {
					f.Close()
				}
				t.Errorf("OpenFile(%q): %v; want ErrOutsideRoot", p, err)
			}
		}
		if got, err := h.Path("/run/uiod"); err != nil || got != tr.Path("run/uiod") {
			t.Errorf("Path(/run/uiod) = %q, %v", got, err)
		}
		if b, err := h.ReadFile("run/in/file", 10); err != nil || string(b) != "ok" {
			t.Errorf("ReadFile through an inside symlink = %q, %v", b, err)
		}
	})
}

// TestSysfsSymlinkOutOfRoot: an attribute that is a symlink out of the root is neither
// read nor written; the file outside stays as it was.
func TestSysfsSymlinkOutOfRoot(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tr := pcitest.Standard(t)
		outside := t.TempDir()
		vendor := filepath.Join(outside, "vendor")
		override := filepath.Join(outside, "override")
		os.WriteFile(vendor, []byte("0x8086\n"), 0o644)
		os.WriteFile(override, []byte("keep\n"), 0o644)
		dev := "sys/devices/pci0000:03/" + pcitest.Igb82576
		tr.Remove(dev + "/vendor")
		tr.Remove(dev + "/driver_override")
		if err := os.Symlink(vendor, tr.Path(dev+"/vendor")); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(tr.Path(dev), override)
		if err := os.Symlink(rel, tr.Path(dev+"/driver_override")); err != nil {
			t.Fatal(err)
		}
		h := hostAt(t, tr.Root)
		d, err := h.Device(pci.MustParseAddr(pcitest.Igb82576))
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(d.Err, pcihost.ErrOutsideRoot) || d.VendorID != 0 {
			t.Errorf("vendor through a symlink out of the root: id %v, err %v", d.VendorID, d.Err)
		}
		if _, err := h.PlanBind([]pci.Addr{d.Addr}, pcihost.DriverVFIO, pcihost.BindOptions{}); !errors.Is(err, pcihost.ErrOutsideRoot) {
			t.Errorf("bind with driver_override out of the root: %v", err)
		}
		if b, _ := os.ReadFile(override); string(b) != "keep\n" {
			t.Errorf("the file outside the root now holds %q", b)
		}
	})
}

// TestWriteOutOfRoot: a plan's write whose file is a symlink out of the root is refused,
// and the file outside is untouched.
func TestWriteOutOfRoot(t *testing.T) {
	tr := pcitest.Standard(t)
	outside := filepath.Join(t.TempDir(), "probe")
	os.WriteFile(outside, []byte("keep"), 0o644)
	tr.Remove("sys/bus/pci/drivers_probe")
	os.Symlink(outside, tr.Path("sys/bus/pci/drivers_probe"))
	h := hostAt(t, tr.Root)
	p, err := h.PlanUnbind([]pci.Addr{pci.MustParseAddr(pcitest.Unbound)}, pcihost.UnbindOptions{Restore: true})
	if err != nil {
		t.Fatal(err)
	}
	testutil.ErrorIs(t, h.Apply(p), pcihost.ErrOutsideRoot, "drivers_probe")
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the file outside the root now holds %q", b)
	}
}

// TestReadsBoundedAndNonblocking: a FIFO in place of an attribute is refused at once (not
// waited on), and an attribute or config file beyond its size bound is refused.
func TestReadsBoundedAndNonblocking(t *testing.T) {
	tr := pcitest.Standard(t)
	dev := "sys/devices/pci0000:03/" + pcitest.Igb82576
	tr.Remove(dev + "/vendor")
	if err := syscall.Mkfifo(tr.Path(dev+"/vendor"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<10) // valid config space, then far more than 4 KiB
	copy(big, pcitest.ConfigSpace(0x8086, 0x10c9, 0x020000, 1, 10))
	tr.WriteFile(dev+"/config", string(big))
	h := hostAt(t, tr.Root)
	done := make(chan pcihost.DeviceInfo, 1)
	go func() {
		d, _ := h.Device(pci.MustParseAddr(pcitest.Igb82576))
		done <- d
	}()
	var d pcihost.DeviceInfo
	select {
	case d = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO attribute blocked")
	}
	if d.Err == nil || !strings.Contains(d.Err.Error(), "not a regular file") {
		t.Errorf("FIFO vendor: %v", d.Err)
	}
	if !errors.Is(d.Err, pcihost.ErrTooLarge) || d.MSIXVectors != -1 {
		t.Errorf("64 KiB config: msix %d, err %v; want ErrTooLarge", d.MSIXVectors, d.Err)
	}
}

// TestDanglingDriverLink: a driver link to nowhere is an error before anything is
// written.
func TestDanglingDriverLink(t *testing.T) {
	tr := pcitest.Standard(t)
	link := "sys/devices/pci0000:03/" + pcitest.Igb82576 + "/driver"
	tr.Remove(link)
	if err := os.Symlink("../../../bus/pci/drivers/ghost", tr.Path(link)); err != nil {
		t.Fatal(err)
	}
	h := hostAt(t, tr.Root)
	h.Writer = tr.Kernel()
	before := tr.Snapshot()
	a := []pci.Addr{pci.MustParseAddr(pcitest.Igb82576)}
	_, err := h.PlanBind(a, pcihost.DriverVFIO, pcihost.BindOptions{})
	testutil.ErrorContains(t, err, "dangling", pcitest.Igb82576)
	_, err = h.PlanUnbind(a, pcihost.UnbindOptions{Restore: true})
	testutil.ErrorContains(t, err, "dangling")
	if _, err := h.PlanQuiesce(a[0]); err == nil {
		t.Error("PlanQuiesce with a dangling driver link succeeded")
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the tree changed")
	}
}

// TestPathUnderSlash: under the root "/" nothing is outside, and symlinks are the
// kernel's to follow (absolute ones such as /var/run -> /run included).
func TestPathUnderSlash(t *testing.T) {
	h, err := pcihost.New("/")
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"/../../etc": "/etc", "run/uiod": "/run/uiod", "": "/"} {
		if got, err := h.Path(rel); err != nil || got != want {
			t.Errorf("Path(%q) = %q, %v; want %q", rel, got, err, want)
		}
	}
}
