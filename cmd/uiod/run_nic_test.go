package main

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestRunUnsupportedNIC checks that uiod run refuses a NIC no driver supports (the
// fixture's X540) with exit 1 and an error naming the device and the supported ones,
// before anything on the host is touched.
func TestRunUnsupportedNIC(t *testing.T) {
	bin := uiodBinary(t)
	tr := pcitest.Standard(t)
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	// The state directory is a host path, under --root; the daemon may create it.
	if err := os.MkdirAll(tr.Path("run/uiod"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "ports:\n  - {name: a, driver: vfio-pci, pci: \"" + pcitest.X540 + "\"}\n" +
		"  - {name: b, driver: vfio-pci, pci: \"" + pcitest.Igb82576 + "\"}\nstate_dir: /run/uiod\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tr.Snapshot()
	out, err := exec.Command(bin, "--root", tr.Root, "run", "--config", cfg).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want 1\n%s", err, out)
	}
	testutil.TextContains(t, "output", string(out), "port a", pcitest.X540, "unsupported device 8086:1528", "supported are", "8086:10fb (82599 SFP+)", "8086:10c9 (82576)")
	if after := tr.Snapshot(); !maps.Equal(before, after) {
		for k, v := range after {
			if bv, ok := before[k]; !ok || bv != v {
				t.Errorf("the host tree changed: %s = %q (was %q)", k, v, bv)
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("the host tree changed: %s removed", k)
			}
		}
	}
}
