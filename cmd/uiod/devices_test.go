package main

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// uiodCLI runs the uiod binary with extra environment for the PCI command tests.
type uiodCLI struct {
	env []string
}

// run runs uiod with args and returns stdout, stderr and the exit code.
func (c *uiodCLI) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runUIOD(t, "", c.env, args...)
}

func TestPCICommands(t *testing.T) {
	cli := &uiodCLI{}
	t.Run("devices", func(t *testing.T) { testDevicesText(t, cli) })
	t.Run("devices all", func(t *testing.T) { testDevicesAll(t, cli) })
	t.Run("devices json", func(t *testing.T) { testDevicesJSON(t, cli) })
	t.Run("devices bad flags", func(t *testing.T) { testDevicesBadFlags(t, cli) })
	t.Run("bind refused", func(t *testing.T) { testBindRefused(t, cli) })
	t.Run("bind dry run", func(t *testing.T) { testBindDryRun(t, cli) })
	t.Run("bind already bound", func(t *testing.T) { testBindAlreadyBound(t, cli) })
	t.Run("bind rollback", func(t *testing.T) { testBindRollbackCLI(t, cli) })
	t.Run("bind modprobe", func(t *testing.T) { testBindModprobeCLI(t, cli) })
	t.Run("unbind", func(t *testing.T) { testUnbindCLI(t, cli) })
}

func testDevicesText(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	tr.InstallPCIIDs()
	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "devices")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("\n%s", out)
	sections := []string{
		"Network devices using a userspace driver\n========================================\n" +
			"0000:04:00.0 'I350 Gigabit Network Connection 1521' drv=vfio-pci numa=0 iommu=4 msix=10\n",
		"Network devices using a kernel driver\n",
		"0000:02:00.0 'Ethernet Controller 10-Gigabit X540-AT2 1528' if=ens2f0 drv=ixgbe numa=1 iommu=2 msix=64 *Active*\n",
		"0000:01:00.0 '82599ES 10-Gigabit SFI/SFP+ Network Connection 10fb' if=eth0 drv=ixgbe numa=0 iommu=1(+0000:00:01.0,0000:01:00.1) msix=64 nic=ixgbe\n",
		"0000:05:00.0 'Virtio 1.0 network device 1041' if=ens5 drv=virtio-pci iommu=5 msix=3 nic=virtio\n",
		"0000:03:00.0 'Intel Corporation 82576 10c9' if=ens3f0 drv=igb iommu=3 msix=10 nic=igb\n",
		"Network devices without a driver\n",
		"0000:06:00.0 'Intel Corporation 82576 10c9' numa=0 iommu=6 msix=10 nic=igb\n",
		"0000:07:00.0 '0000:10fb' numa=0 iommu=7 error=",
	}
	for _, s := range sections {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if strings.Contains(out, pcitest.SATA) || strings.Contains(out, pcitest.Bridge+" ") {
		t.Error("non-network functions listed without --all")
	}
	if strings.Index(out, "userspace driver") > strings.Index(out, "kernel driver") ||
		strings.Index(out, "kernel driver") > strings.Index(out, "without a driver") {
		t.Error("groups out of order")
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("devices changed the tree")
	}
}

func testDevicesAll(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	out, stderr, code := cli.run(t, "--root", tr.Root, "devices", "--all")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "PCI devices using a kernel driver") ||
		!strings.Contains(out, "0000:00:1f.2 '8086:2922' drv=ahci") {
		t.Errorf("output:\n%s", out)
	}
	// No pci.ids: one warning, ids only.
	if n := strings.Count(stderr, "no pci.ids database"); n != 1 {
		t.Errorf("%d warnings about pci.ids, want 1:\n%s", n, stderr)
	}
	// No pci.ids: a function a uiod driver opens is named by it, any other by its ids.
	testutil.TextContains(t, "without pci.ids, output", out, "0000:02:00.0 '8086:1528' if=ens2f0", "0000:01:00.0 '82599 SFP+ 10fb' if=eth0",
		"0000:05:00.0 'virtio-net 1041' if=ens5 drv=virtio-pci iommu=5 msix=3 nic=virtio\n")
}

func testDevicesJSON(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	tr.InstallPCIIDs()
	out, stderr, code := cli.run(t, "--root", tr.Root, "devices", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var devs []map[string]any
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(devs) != 8 {
		t.Errorf("%d objects, want 8", len(devs))
	}
	keys := []string{"address", "vendor_id", "device_id", "vendor_name", "device_name", "class", "driver", "interfaces",
		"iommu_group", "iommu_group_members", "numa_node", "msix_vectors", "active", "error", "nic"}
	byAddr := map[string]map[string]any{}
	for _, d := range devs {
		for _, k := range keys {
			if _, ok := d[k]; !ok {
				t.Errorf("%v lacks key %q", d["address"], k)
			}
		}
		byAddr[d["address"].(string)] = d
	}
	x := byAddr[pcitest.X540]
	if x["active"] != true || x["driver"] != "ixgbe" || x["vendor_name"] != "Intel Corporation" || x["numa_node"] != 1.0 ||
		x["msix_vectors"] != 64.0 || x["iommu_group"] != 2.0 || x["error"] != "" {
		t.Errorf("X540: %v", x)
	}
	for addr, want := range map[string]string{pcitest.X540: "", pcitest.Virtio: "virtio", pcitest.Igb82576: "igb"} {
		if got := byAddr[addr]["nic"]; got != want {
			t.Errorf("%s: nic %v, want %q", addr, got, want)
		}
	}
	if v := byAddr[pcitest.Virtio]; v["vendor_id"] != "1af4" || v["device_id"] != "1041" {
		t.Errorf("virtio: %v", v)
	}
	if e, _ := byAddr[pcitest.Garbage]["error"].(string); !strings.Contains(e, "vendor") {
		t.Errorf("garbage vendor error %q", e)
	}
	// An empty host prints an empty array, not null.
	empty := pcitest.New(t)
	out, _, code = cli.run(t, "--root", empty.Root, "devices", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty host: exit %d, %q", code, out)
	}
}

func testDevicesBadFlags(t *testing.T, cli *uiodCLI) {
	tr := pcitest.Standard(t)
	for _, args := range [][]string{{"devices", "extra"}, {"devices", "--bogus"}} {
		if _, _, code := cli.run(t, append([]string{"--root", tr.Root}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// A root without sysfs is a runtime failure.
	if _, stderr, code := cli.run(t, "--root", t.TempDir(), "devices"); code != 1 || !strings.Contains(stderr, "sys/bus/pci/devices") {
		t.Errorf("empty root: exit %d, %s", code, stderr)
	}
}

// TestDevicesMissingIOMMUGroup: `uiod devices` lists a function whose iommu_group link is
// missing on a host with an IOMMU with an error on its line (and in --json), exit 0.
func TestDevicesMissingIOMMUGroup(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"text", nil, pcitest.Igb82576 + " 'Intel Corporation 82576 10c9' if=ens3f0 drv=igb msix=10 nic=igb error=\"no iommu_group link"},
		{"json", []string{"--json"}, `"error": "` + pcitest.Igb82576 + `: no iommu_group link`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tr.InstallPCIIDs()
			tr.Remove("sys/bus/pci/devices/" + pcitest.Igb82576 + "/iommu_group")
			out, stderr, code := runUIOD(t, "", nil, append([]string{"--root", tr.Root, "devices"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}
