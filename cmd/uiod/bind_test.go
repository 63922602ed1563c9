package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

func testBindRefused(t *testing.T, cli *uiodCLI) {
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		args  []string
		want  []string
	}{
		{"no driver flag", nil, []string{"bind", pcitest.Igb82576}, []string{"--driver is required"}},
		{"no address", nil, []string{"bind", "--driver", "vfio-pci"}, []string{"requires at least 1 arg"}},
		{"bad address", nil, []string{"bind", "--driver", "vfio-pci", "../../03:00.0"}, []string{"invalid PCI address", "../../03:00.0"}},
		{"short address", nil, []string{"bind", "--driver", "vfio-pci", pcitest.Igb82576, "3:00.0"}, []string{"invalid PCI address", `"3:00.0"`}},
		{"bad driver", nil, []string{"bind", "--driver", "../vfio", pcitest.Igb82576}, []string{"--driver", "../vfio"}},
		{"driver like an option", nil, []string{"bind", "--dry-run", "--driver=-r", pcitest.Unbound}, []string{"--driver", `"-r"`}},
		{"unknown device", nil, []string{"bind", "--driver", "vfio-pci", "0000:42:00.0"}, []string{"no such PCI device 0000:42:00.0"}},
		{"active", nil, []string{"bind", "--driver", "vfio-pci", pcitest.X540}, []string{pcitest.X540, "active", "ens2f0", "--force"}},
		{"not viable", nil, []string{"bind", "--driver", "vfio-pci", pcitest.Port82599A}, []string{"IOMMU group 1", "0000:01:00.1 (bound to ixgbe)"}},
		{"no iommu", func(tr *pcitest.Tree) { tr.DropIOMMU() }, []string{"bind", "--driver", "vfio-pci", pcitest.Igb82576}, []string{"no IOMMU groups", "--noiommu-mode"}},
		{"not a nic", nil, []string{"bind", "--dry-run", "--driver", "vfio-pci", pcitest.SATA}, []string{pcitest.SATA, "class 010601", "not a network controller", "driver ahci", "--force"}},
		{"not a nic named", func(tr *pcitest.Tree) { tr.InstallPCIIDs() }, []string{"bind", "--driver", "uio_pci_generic", pcitest.SATA}, []string{"SATA controller (class 010601)", "driver ahci"}},
		{"quiesce not a nic", func(tr *pcitest.Tree) {
			tr.AddFunction(pcitest.Function{Addr: "0000:0a:00.0", Vendor: 0x8086, Device: 0x2922, Class: 0x010601, Driver: "vfio-pci", IOMMUGroup: 10})
		}, []string{"quiesce", "0000:0a:00.0"}, []string{"0000:0a:00.0", "class 010601", "driver vfio-pci", "--force"}},
		{"bad flag", nil, []string{"bind", "--driver", "vfio-pci", "--frce", pcitest.Igb82576}, []string{"unknown flag"}},
		{"unbind unknown", nil, []string{"unbind", "0000:42:00.0"}, []string{"0000:42:00.0"}},
		{"unbind bad address", nil, []string{"unbind", "0000:42:00.0/../x"}, []string{"invalid PCI address"}},
		{"unbind active", nil, []string{"unbind", "--restore", pcitest.X540}, []string{"active"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			if tt.setup != nil {
				tt.setup(tr)
			}
			before := tr.Snapshot()
			stdout, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, tt.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s%s", code, stdout, stderr)
			}
			for _, s := range tt.want {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("the tree changed")
			}
		})
	}
}

func testBindDryRun(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "bind", "--dry-run", "--driver", "uio_pci_generic", pcitest.Igb82576, pcitest.Unbound)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	testutil.TextContains(t, "dry run", out,
		`echo -n uio_pci_generic > `+tr.Path("sys/bus/pci/devices/0000:03:00.0/driver_override"),
		`echo -n 0000:03:00.0 > `+tr.Path("sys/bus/pci/drivers/igb/unbind"),
		`echo -n 0000:03:00.0 > `+tr.Path("sys/bus/pci/drivers_probe"),
		`echo -n 0000:06:00.0 > `+tr.Path("sys/bus/pci/drivers_probe"),
	)
	if !strings.Contains(stderr, "warning: uio_pci_generic gives the device no DMA protection") {
		t.Errorf("no DMA warning:\n%s", stderr)
	}
	// The short form BB:DD.F means domain 0000.
	out, stderr, code = cli.run(t, "--root", tr.Root, "bind", "--dry-run", "--driver", "vfio-pci", "03:00.0")
	if code != 0 || !strings.Contains(out, "# 0000:03:00.0: igb -> vfio-pci") {
		t.Errorf("short address: exit %d\n%s%s", code, out, stderr)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("a dry run changed the tree")
	}
	// No-IOMMU mode: the loud warning and the parameter write, still nothing written.
	tr.DropIOMMU()
	tr.AddNoIOMMUParam()
	before = tr.Snapshot()
	out, stderr, code = cli.run(t, "--root", tr.Root, "bind", "--dry-run", "--noiommu-mode", "--driver", "vfio-pci", pcitest.Igb82576)
	if code != 0 || !strings.Contains(stderr, "!!! WARNING: ENABLING UNSAFE NO-IOMMU MODE") ||
		!strings.Contains(out, `echo -n 1 > `+tr.Path("sys/module/vfio/parameters/enable_unsafe_noiommu_mode")) {
		t.Errorf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("--dry-run changed the tree")
	}
}

func testBindAlreadyBound(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "bind", "--driver", "vfio-pci", pcitest.I350)
	if code != 0 || !strings.Contains(out, "0000:04:00.0: already on vfio-pci") {
		t.Errorf("exit %d: %s%s", code, out, stderr)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("an already bound function was written to")
	}
}

// testBindRollbackCLI binds for real against a fixture whose "kernel" does not react:
// the probe binds nothing, so verification fails and the bind is rolled back.
func testBindRollbackCLI(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	_, stderr, code := cli.run(t, "--root", tr.Root, "bind", "--driver", "vfio-pci", pcitest.Igb82576)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	testutil.TextContains(t, "stderr", stderr, "bind 0000:03:00.0: verify", "rolled back")
	// The apply wrote override, unbind and probe; the fixture kernel did not unbind, so
	// the rollback only cleared the override (the function is still on igb) and removed
	// the state file.
	for file, want := range map[string]string{
		"sys/bus/pci/devices/0000:03:00.0/driver_override": "\n",
		"sys/bus/pci/drivers/igb/unbind":                   pcitest.Igb82576,
		"sys/bus/pci/drivers_probe":                        pcitest.Igb82576,
		"sys/bus/pci/drivers/igb/bind":                     "",
	} {
		if got := tr.ReadFile(file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if tr.Driver(pcitest.Igb82576) != "igb" {
		t.Errorf("driver %q", tr.Driver(pcitest.Igb82576))
	}
	if _, err := os.Stat(tr.Path("run/uiod/0000:03:00.0.json")); !os.IsNotExist(err) {
		t.Errorf("state file after rollback: %v", err)
	}
}

// testBindModprobeCLI: under a root other than /, bind never runs the host's modprobe
// (it would load the driver into the host, not under the root): a missing driver is an
// error naming the driver and the root, in the dry run too, and nothing is written.
func testBindModprobeCLI(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	tr.Remove("sys/bus/pci/drivers/uio_pci_generic")
	bin := t.TempDir()
	log := filepath.Join(bin, "modprobe.log")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nmkdir -p " + tr.Path("sys/bus/pci/drivers") + "/$1\n"
	if err := os.WriteFile(filepath.Join(bin, "modprobe"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := *cli
	c.env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	before := tr.Snapshot()
	for _, dry := range []bool{true, false} {
		args := []string{"--root", tr.Root, "bind", "--driver", "uio_pci_generic", pcitest.Unbound}
		if dry {
			args = append(args, "--dry-run")
		}
		_, stderr, code := c.run(t, args...)
		if code != 1 || !strings.Contains(stderr, "driver uio_pci_generic missing under root "+tr.Root) {
			t.Errorf("dry run %v: exit %d, want 1 naming the driver and root: %s", dry, code, stderr)
		}
	}
	if got, err := os.ReadFile(log); !os.IsNotExist(err) {
		t.Errorf("the host's modprobe ran: %q", got)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the tree changed")
	}
}

func testUnbindCLI(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "unbind", "--dry-run", "--restore", pcitest.I350, pcitest.Unbound)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	testutil.TextContains(t, "dry run", out,
		`echo -n 0000:04:00.0 > `+tr.Path("sys/bus/pci/drivers/vfio-pci/unbind"),
		`echo -n 0000:04:00.0 > `+tr.Path("sys/bus/pci/drivers_probe"),
		"0000:04:00.0: vfio-pci -> (kernel's choice)",
	)
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("--dry-run changed the tree")
	}
	// Without the fake kernel, an unbind write lands in the file and verification fails.
	_, stderr, code = cli.run(t, "--root", tr.Root, "unbind", pcitest.I350)
	if code != 1 || !strings.Contains(stderr, "unbind 0000:04:00.0: verify") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if got := tr.ReadFile("sys/bus/pci/drivers/vfio-pci/unbind"); got != pcitest.I350 {
		t.Errorf("vfio-pci/unbind = %q", got)
	}
}

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
	testutil.TextContains(t, "dry run", out,
		"# "+pcitest.Unbound+": (no driver) -> vfio-pci",
		"echo -n vfio-pci > "+tr.Path("sys/bus/pci/devices/"+pcitest.Unbound+"/driver_override"),
		"# "+pcitest.Igb82576+": igb -> uio_pci_generic",
		"echo -n "+pcitest.Igb82576+" > "+tr.Path("sys/bus/pci/drivers/igb/unbind"),
	)
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
	port := func(nicName, addr string, more ...string) string {
		return "metrics:\n  listen: \"\"\nports:\n  - name: p0\n    driver: vfio-pci\n    nic: " + nicName +
			"\n    pci: \"" + addr + "\"\n" + strings.Join(more, "") + "forward:\n  mode: reflect\n"
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
		// nic: auto, once the device is identified, is held to its driver's limits.
		{"auto ring beyond an 82576", port("auto", pcitest.Igb82576, "    rx_ring: 8192\n"),
			[]string{"ports[0].rx_ring", "port p0", "8086:10c9 (82576)", "nic: auto drives it with igb", "[64, 4096], the 82576 (igb)'s range"}},
		{"auto ring an 82599 takes", port("auto", pcitest.Port82599A, "    rx_ring: 8192\n"), nil},
		{"auto ring on an absent device", port("auto", "0000:42:00.0", "    rx_ring: 8192\n"), nil},
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
