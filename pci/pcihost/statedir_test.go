package pcihost_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// bindIgb binds the standard tree's 82576 to vfio-pci through the fake kernel.
func bindIgb(t *testing.T, tr *pcitest.Tree) error {
	t.Helper()
	k := tr.Kernel()
	h := hostAt(t, tr.Root)
	h.Writer, h.Modprobe = k, k.Modprobe
	p, err := h.PlanBind([]pci.Addr{pci.MustParseAddr(pcitest.Igb82576)}, pcihost.DriverVFIO, pcihost.BindOptions{})
	if err != nil {
		return err
	}
	return h.Apply(p)
}

// TestStateDirRefusesSteering: the bind state directory and files are never followed
// through a symlink, and a directory others could write to is refused.
func TestStateDirRefusesSteering(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, tr *pcitest.Tree, outside string)
		want  string
	}{
		{"directory is a symlink out of the root", func(t *testing.T, tr *pcitest.Tree, outside string) {
			os.Symlink(outside, tr.Path("run/uiod"))
		}, "outside the root"},
		{"directory is a symlink", func(t *testing.T, tr *pcitest.Tree, outside string) {
			os.Mkdir(tr.Path("run/other"), 0o755)
			os.Symlink("other", tr.Path("run/uiod"))
		}, "a symlink"},
		{"world writable", func(t *testing.T, tr *pcitest.Tree, outside string) {
			os.Mkdir(tr.Path("run/uiod"), 0o755)
			os.Chmod(tr.Path("run/uiod"), 0o777)
		}, "writable by group or others"},
		{"group writable", func(t *testing.T, tr *pcitest.Tree, outside string) {
			os.Mkdir(tr.Path("run/uiod"), 0o755)
			os.Chmod(tr.Path("run/uiod"), 0o775)
		}, "writable by group or others"},
		{"owned by another user", func(t *testing.T, tr *pcitest.Tree, outside string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			os.Mkdir(tr.Path("run/uiod"), 0o755)
			os.Chown(tr.Path("run/uiod"), 4242, 4242)
		}, "owned by uid 4242"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			outside := t.TempDir()
			tt.setup(t, tr, outside)
			before := tr.Snapshot()
			testutil.ErrorContains(t, bindIgb(t, tr), tt.want)
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("state written outside the root: %v", ents)
			}
			if tr.Driver(pcitest.Igb82576) != "igb" || tr.ReadFile("sys/bus/pci/devices/"+pcitest.Igb82576+"/driver_override") != before["sys/devices/pci0000:03/"+pcitest.Igb82576+"/driver_override"][len("file "):] {
				t.Error("the function was changed although its state could not be recorded")
			}
		})
	}
}

// TestStateFileSymlink: a state file that is a symlink is refused, not read through.
func TestStateFileSymlink(t *testing.T) {
	tr := pcitest.Standard(t)
	outside := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(outside, []byte(`{"address":"0000:03:00.0","driver":"igb","driver_override":"","bound_to":"vfio-pci"}`), 0o644)
	os.MkdirAll(tr.Path("run/uiod"), 0o755)
	os.Symlink(outside, tr.Path("run/uiod/0000:03:00.0.json"))
	h := hostAt(t, tr.Root)
	_, ok, err := h.State(pci.MustParseAddr(pcitest.Igb82576))
	if err == nil || ok || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("State through a symlink: ok %v, %v", ok, err)
	}
}

// TestStateValuesValidated: values read back from a state file are checked like user
// input before a plan uses them.
func TestStateValuesValidated(t *testing.T) {
	for _, body := range []string{
		`{"address":"0000:03:00.0","driver":"igb","driver_override":"../../etc","bound_to":"vfio-pci"}`,
		`{"address":"0000:03:00.0","driver":"igb","driver_override":"vfio-pci\nigb","bound_to":"vfio-pci"}`,
		`{"address":"0000:03:00.0","driver":"igb","driver_override":"","bound_to":"-r"}`,
		`{"address":"0000:03:00.0","driver":"ig b"}`,
	} {
		tr := pcitest.Standard(t)
		tr.WriteFile("run/uiod/0000:03:00.0.json", body)
		h := hostAt(t, tr.Root)
		if _, _, err := h.State(pci.MustParseAddr(pcitest.Igb82576)); !errors.Is(err, pci.ErrMalformed) {
			t.Errorf("state %s: %v, want ErrMalformed", body, err)
		}
		_, err := h.PlanUnbind([]pci.Addr{pci.MustParseAddr(pcitest.Igb82576)}, pcihost.UnbindOptions{Restore: true, Force: true})
		if !errors.Is(err, pci.ErrMalformed) {
			t.Errorf("unbind --restore with state %s: %v, want ErrMalformed", body, err)
		}
	}
}

// TestStateFileNotTruncated: a bind replaces its state file by rename; a file hard-linked
// to the old name keeps its content.
func TestStateFileNotTruncated(t *testing.T) {
	tr := pcitest.Standard(t)
	if err := bindIgb(t, tr); err != nil {
		t.Fatal(err)
	}
	st := tr.Path("run/uiod/0000:03:00.0.json")
	keep := filepath.Join(tr.Root, "keep")
	if err := os.Link(st, keep); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(keep)
	h := hostAt(t, tr.Root)
	d, err := h.OpenStateDir("/run/uiod", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("0000:03:00.0.json", []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(keep); string(after) != string(before) {
		t.Errorf("hard-linked file changed to %q", after)
	}
	if _, err := d.Open("x", os.O_RDWR|os.O_TRUNC); err == nil {
		t.Error("StateDir.Open accepted O_TRUNC")
	}
}
