package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

const quiesceAddr = "0000:09:00.0"

// quiesceTree is the standard tree plus an 82576 left on uio_pci_generic with bus
// mastering on (command 0x0406), as a killed uiod leaves it, with a reset attribute.
func quiesceTree(t *testing.T) *pcitest.Tree {
	tr := pcitest.Standard(t)
	tr.AddFunction(pcitest.Function{Addr: quiesceAddr, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: pcihost.DriverUIO, IOMMUGroup: 9})
	tr.AddReset(quiesceAddr)
	return tr
}

func TestQuiesceCommand(t *testing.T) {
	cli := &uiodCLI{}
	tr := quiesceTree(t)
	out, stderr, code := cli.run(t, "--root", tr.Root, "quiesce", quiesceAddr, pcitest.I350)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, a := range []string{quiesceAddr, pcitest.I350} {
		if cmd := tr.Command(a); cmd != 0x0402 {
			t.Errorf("%s: command %#04x, want 0x0402 (bit 2, bus master, cleared; nothing else)", a, cmd)
		}
	}
	if got := tr.ReadFile("sys/bus/pci/devices/" + quiesceAddr + "/reset"); got != "1" {
		t.Errorf("reset holds %q, want 1", got)
	}
	if !strings.Contains(out, quiesceAddr+": bus master off (command 0x0406 -> 0x0402), reset") ||
		!strings.Contains(out, pcitest.I350+": bus master off (command 0x0406 -> 0x0402), no reset attribute") {
		t.Errorf("output:\n%s", out)
	}
}

func TestQuiesceDryRun(t *testing.T) {
	cli := &uiodCLI{}
	tr := quiesceTree(t)
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "quiesce", "--dry-run", quiesceAddr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	testutil.TextContains(t, "dry run", out,
		"# "+quiesceAddr+" (uio_pci_generic): command 0x0406 -> 0x0402 (bus master off)",
		"write 0x0402 (2 bytes, little endian) at offset 0x4 of "+tr.Path("sys/bus/pci/devices/"+quiesceAddr+"/config"),
		"echo -n 1 > "+tr.Path("sys/bus/pci/devices/"+quiesceAddr+"/reset"),
	)
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("dry run changed the tree")
	}
}

// TestQuiesceRefuses: bad addresses, missing functions and functions of host drivers are
// usage errors (exit 2), and nothing is touched — not even the good addresses named
// with them.
func TestQuiesceRefuses(t *testing.T) {
	cli := &uiodCLI{}
	tr := quiesceTree(t)
	before := tr.Snapshot()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{quiesceAddr, "zz:00.0"}, "zz:00.0"},
		{[]string{"0000:00:00.8"}, "0000:00:00.8"},
		{[]string{quiesceAddr, "0000:42:00.0"}, "0000:42:00.0"},
		{[]string{quiesceAddr, pcitest.X540}, "host driver ixgbe"},
		{nil, "give PCI addresses"},
		{[]string{"--config", "x.yaml", quiesceAddr}, "not both"},
	} {
		_, stderr, code := cli.run(t, append([]string{"--root", tr.Root, "quiesce"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("quiesce %v: exit %d, want 2 naming %q: %s", tt.args, code, tt.want, stderr)
		}
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("a refused quiesce changed the tree")
	}
}

// TestQuiesceConfig quiesces the PCI ports of a configuration, and refuses while a uiod
// run holds its state_dir.
func TestQuiesceConfig(t *testing.T) {
	cli := &uiodCLI{}
	tr := quiesceTree(t)
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	os.WriteFile(cfg, []byte("state_dir: /run/uiod\nmetrics:\n  listen: \"\"\nforward:\n  mode: reflect\nports:\n  - name: p0\n    driver: uio_pci_generic\n    pci: "+quiesceAddr+"\n"), 0o644)
	// A running daemon holds the pid file's lock.
	os.MkdirAll(tr.Path("run/uiod"), 0o755)
	pf, err := os.Create(tr.Path("run/uiod/uiod.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pf.WriteString("4321\n")
	if err := unix.Flock(int(pf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli.run(t, "--root", tr.Root, "quiesce", "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "uiod run (pid 4321) is running") || tr.Command(quiesceAddr) != 0x0406 {
		t.Errorf("with a running daemon: exit %d, command %#04x: %s", code, tr.Command(quiesceAddr), stderr)
	}
	pf.Close() // the daemon died: its lock is gone, its pid file stays
	out, stderr, code := cli.run(t, "--root", tr.Root, "quiesce", "--config", cfg)
	if code != 0 || tr.Command(quiesceAddr) != 0x0402 {
		t.Fatalf("exit %d command %#04x: %s%s", code, tr.Command(quiesceAddr), out, stderr)
	}
}
