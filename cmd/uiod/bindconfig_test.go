package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcitest"
)

// bindConfig writes a configuration with a vfio-pci port on the standard tree's unbound
// 82576, a uio_pci_generic port on the igb 82576 and a sim port.
func bindConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "uiod.yaml")
	yaml := `metrics:
  listen: ""
ports:
  - name: p0
    driver: vfio-pci
    pci: "` + pcitest.Unbound + `"
  - name: p1
    driver: uio_pci_generic
    pci: "` + pcitest.Igb82576 + `"
  - name: s0
    driver: sim
    wire: pair:w
forward:
  mode: reflect
`
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBindConfig: bind --config plans every PCI port to its own driver (sim ports
// skipped), in one plan: a dry run shows both, a real run that fails verification on
// the fixture (no kernel reacts) rolls both back; unbind --config --restore plans both.
func TestBindConfig(t *testing.T) {
	cli := &uiodCLI{}
	tr := pcitest.Standard(t)
	cfg := bindConfig(t)
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "bind", "--dry-run", "--config", cfg)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# " + pcitest.Unbound + ": (no driver) -> vfio-pci",
		"echo -n vfio-pci > " + tr.Path("sys/bus/pci/devices/"+pcitest.Unbound+"/driver_override"),
		"# " + pcitest.Igb82576 + ": igb -> uio_pci_generic",
		"echo -n " + pcitest.Igb82576 + " > " + tr.Path("sys/bus/pci/drivers/igb/unbind"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "uio_pci_generic gives the device no DMA protection") {
		t.Errorf("no uio warning: %s", stderr)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("dry run changed the tree")
	}

	_, stderr, code = cli.run(t, "--root", tr.Root, "bind", "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "rolled back") {
		t.Errorf("real run on a tree without a kernel: exit %d, want 1 and a rollback: %s", code, stderr)
	}
	for a, drv := range map[string]string{pcitest.Unbound: "", pcitest.Igb82576: "igb"} {
		if got := tr.ReadFile("sys/bus/pci/devices/" + a + "/driver_override"); got != "\n" && got != "(null)\n" {
			t.Errorf("%s: driver_override %q after the rollback, want none", a, got)
		}
		if got := tr.Driver(a); got != drv {
			t.Errorf("%s: driver %q after the rollback, want %q", a, got, drv)
		}
		if _, err := os.Stat(tr.Path("run/uiod/" + a + ".json")); !os.IsNotExist(err) {
			t.Errorf("%s: state file after the rollback: %v", a, err)
		}
	}

	out, stderr, code = cli.run(t, "--root", tr.Root, "unbind", "--restore", "--dry-run", "--config", cfg)
	if code != 0 || !strings.Contains(out, "# "+pcitest.Igb82576+": igb -> (kernel's choice)") || !strings.Contains(out, pcitest.Unbound) {
		t.Errorf("unbind --config dry run: exit %d:\n%s%s", code, out, stderr)
	}
}

func TestBindConfigUsage(t *testing.T) {
	cli := &uiodCLI{}
	tr := pcitest.Standard(t)
	cfg := bindConfig(t)
	simOnly := filepath.Join(t.TempDir(), "sim.yaml")
	os.WriteFile(simOnly, []byte("metrics:\n  listen: \"\"\nports:\n  - name: s0\n    driver: sim\n    wire: pair:w\nforward:\n  mode: reflect\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bind", "--config", cfg, "--driver", "vfio-pci"}, "no --driver"},
		{[]string{"bind", "--config", cfg, pcitest.Unbound}, "no addresses"},
		{[]string{"bind", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
		{[]string{"unbind", "--config", cfg, pcitest.Unbound}, "not both"},
	} {
		_, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want 2 naming %q: %s", tt.args, code, tt.want, stderr)
		}
	}
}

// TestConfigNICMismatch: `config validate` and `bind --config` refuse a port whose
// device (present under --root) its nic: does not drive, naming the port, the device and
// the nic: that fits, exit 2, the tree untouched; the right nic: (or auto) passes.
func TestConfigNICMismatch(t *testing.T) {
	cli := &uiodCLI{}
	port := func(nicName, addr string) string {
		return "metrics:\n  listen: \"\"\nports:\n  - name: p0\n    driver: vfio-pci\n    nic: " + nicName +
			"\n    pci: \"" + addr + "\"\nforward:\n  mode: reflect\n"
	}
	tests := []struct {
		name string
		yaml string
		want []string // on stderr; nil: accepted
	}{
		{"ixgbe on an 82576", port("ixgbe", pcitest.Unbound), []string{"ports[0].nic", `"ixgbe"`, "port p0", pcitest.Unbound, "8086:10c9 (82576)", "which nic: ixgbe does not drive", "use nic: igb"}},
		{"igb on an 82599", port("igb", pcitest.Port82599A), []string{"8086:10fb (82599 SFP+)", "use nic: ixgbe"}},
		{"virtio on an 82576", port("virtio", pcitest.Igb82576), []string{"use nic: igb"}},
		{"unsupported X540", port("auto", pcitest.X540), []string{"8086:1528", "no uiod NIC driver supports", "supported are"}},
		{"igb on an 82576", port("igb", pcitest.Unbound), nil},
		{"auto on a virtio", port("auto", pcitest.Virtio), nil},
		{"absent device", port("ixgbe", "0000:42:00.0"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			cfg := filepath.Join(t.TempDir(), "uiod.yaml")
			if err := os.WriteFile(cfg, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			before := tr.Snapshot()
			for _, args := range [][]string{{"config", "validate", cfg}, {"bind", "--config", cfg, "--dry-run", "--force"}} {
				_, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, args...)...)
				if tt.want == nil {
					if code != 0 && args[0] == "config" {
						t.Errorf("%v: exit %d, want 0: %s", args, code, stderr)
					}
					if strings.Contains(stderr, ".nic") {
						t.Errorf("%v: refused the nic: %s", args, stderr)
					}
					continue
				}
				if code != 2 {
					t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
				}
				for _, s := range tt.want {
					if !strings.Contains(stderr, s) {
						t.Errorf("%v: stderr lacks %q: %s", args, s, stderr)
					}
				}
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("the tree changed")
			}
		})
	}
}

// TestConfigNoPCIPorts: bind and unbind --config on a configuration of sim ports only are
// a no-op, exit 0, with a log line saying what to edit; the tree is untouched.
func TestConfigNoPCIPorts(t *testing.T) {
	cli := &uiodCLI{}
	tr := pcitest.Standard(t)
	simOnly := filepath.Join(t.TempDir(), "sim.yaml")
	if err := os.WriteFile(simOnly, []byte("metrics:\n  listen: \"\"\nports:\n  - name: s0\n    driver: sim\n    wire: pair:w\nforward:\n  mode: reflect\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tr.Snapshot()
	for _, args := range [][]string{{"bind", "--config", simOnly}, {"unbind", "--restore", "--config", simOnly}, {"bind", "--dry-run", "--config", simOnly}} {
		out, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, args...)...)
		if code != 0 || out != "" {
			t.Errorf("%v: exit %d, want 0 and nothing on stdout:\n%s%s", args, code, out, stderr)
		}
		for _, want := range []string{simOnly + " has no PCI ports", "nothing to " + args[0], "add a port with pci: ADDR and driver: vfio-pci"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: log lacks %q: %s", args, want, stderr)
			}
		}
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the tree changed")
	}
}
