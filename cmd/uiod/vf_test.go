package main

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// vfTree is the standard tree with SR-IOV on the igb 82576 (2 VFs made) and on the SATA
// controller.
func vfTree(t *testing.T) *pcitest.Tree {
	t.Helper()
	tr := pcitest.Standard(t)
	tr.AddSRIOV(pcitest.Igb82576, pcitest.IGB82576VFs)
	tr.AddSRIOV(pcitest.SATA, pcitest.SRIOV{TotalVFs: 2, Offset: 1, Stride: 1, Vendor: 0x8086, Device: 0x2923})
	return tr
}

// TestVFCommandRefused: every refusal is exit 2 naming what is wrong, and the tree is
// left as it was.
func TestVFCommandRefused(t *testing.T) {
	cli := &uiodCLI{}
	tests := []struct {
		name string
		vfs  int // VFs the 82576 has before
		args []string
		want string
	}{
		{"not a NIC", 0, []string{"vf", "create", pcitest.SATA, "1"}, "not a network controller"},
		{"no SR-IOV", 0, []string{"vf", "create", pcitest.Port82599A, "2"}, "no SR-IOV capability"},
		{"too many", 0, []string{"vf", "create", pcitest.Igb82576, "8"}, "at most 7 VFs (sriov_totalvfs), not 8"},
		{"not a count", 0, []string{"vf", "create", pcitest.Igb82576, "two"}, `N "two" is not a count`},
		{"VFs exist", 2, []string{"vf", "create", pcitest.Igb82576, "4"}, "remove them first (uiod vf remove 0000:03:00.0)"},
		{"no subcommand", 0, []string{"vf"}, "vf: want a subcommand: create, list or remove"},
		{"bad subcommand", 0, []string{"vf", "make"}, `unknown command "make" for "uiod vf"`},
		{"list no SR-IOV", 0, []string{"vf", "list", pcitest.X540}, "no SR-IOV capability"},
		{"missing", 0, []string{"vf", "remove", "0000:42:00.0"}, "0000:42:00.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := vfTree(t)
			if tt.vfs > 0 {
				if err := tr.SetVFs(pcitest.Igb82576, tt.vfs); err != nil {
					t.Fatal(err)
				}
			}
			before := tr.Snapshot()
			_, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want 2 with %q: %s", code, tt.want, stderr)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("a refused command changed the tree")
			}
		})
	}
}

func TestVFCommand(t *testing.T) {
	cli := &uiodCLI{}
	tr := vfTree(t)
	numvfs := "sys/bus/pci/devices/" + pcitest.Igb82576 + "/sriov_numvfs"

	before := tr.Snapshot()
	out, stderr, code := cli.run(t, "--root", tr.Root, "vf", "create", "--dry-run", "ens3f0", "4")
	if code != 0 || !strings.Contains(out, "# 0000:03:00.0 (igb): 0 VFs -> 4 VFs\necho -n 4 > "+tr.Path(numvfs)) {
		t.Errorf("dry run: exit %d\n%s%s", code, out, stderr)
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the dry run changed the tree")
	}

	// A file is no kernel: the count lands but no VFs appear, so the create is rolled back.
	_, stderr, code = cli.run(t, "--root", tr.Root, "vf", "create", pcitest.Igb82576, "2")
	if code != 1 || !strings.Contains(stderr, "virtfn links") || !strings.Contains(stderr, "rolled back") {
		t.Errorf("create on a plain file: exit %d: %s", code, stderr)
	}
	if got := tr.ReadFile(numvfs); got != "0" {
		t.Errorf("sriov_numvfs %q after the rollback, want 0", got)
	}

	if err := tr.SetVFs(pcitest.Igb82576, 2); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = cli.run(t, "--root", tr.Root, "vf", "list")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	testutil.TextContains(t, "list", out,
		"0000:00:1f.2 '8086:2922' drv=ahci numa=0 iommu=8 vfs=0/2\n",
		"0000:03:00.0 '82576 10c9' if=ens3f0 drv=igb iommu=3 msix=10 vfs=2/7 nic=igb\n",
		"  vf0 0000:03:10.0 '82576 VF 10ca' iommu=20 msix=3 pf=0000:03:00.0 nic=igbvf",
		"  vf1 0000:03:10.2 '82576 VF 10ca' iommu=21 msix=3 pf=0000:03:00.0 nic=igbvf",
	)
	out, _, code = cli.run(t, "--root", tr.Root, "devices", "--driver", "none")
	if code != 0 || !strings.Contains(out, "0000:03:10.2 '82576 VF 10ca' iommu=21 msix=3 pf=0000:03:00.0 nic=igbvf") {
		t.Errorf("devices: exit %d\n%s", code, out)
	}
	out, _, code = cli.run(t, "--root", tr.Root, "vf", "list", "--json", pcitest.Igb82576)
	var pfs []struct {
		Address string
		SRIOV   struct {
			NumVFs   int      `json:"num_vfs"`
			TotalVFs int      `json:"total_vfs"`
			VFs      []string `json:"vfs"`
		}
	}
	if err := json.Unmarshal([]byte(out), &pfs); code != 0 || err != nil || len(pfs) != 1 || pfs[0].SRIOV.NumVFs != 2 ||
		pfs[0].SRIOV.TotalVFs != 7 || strings.Join(pfs[0].SRIOV.VFs, ",") != "0000:03:10.0,0000:03:10.2" {
		t.Errorf("list --json: exit %d, %v: %+v\n%s", code, err, pfs, out)
	}

	out, stderr, code = cli.run(t, "--root", tr.Root, "vf", "remove", pcitest.Igb82576)
	if code != 0 || tr.ReadFile(numvfs) != "0" || !strings.Contains(out, "0000:03:00.0: 0 VFs") {
		t.Errorf("remove: exit %d, sriov_numvfs %q\n%s%s", code, tr.ReadFile(numvfs), out, stderr)
	}
}

// TestVFCompletion: the shell completes the PF argument with the functions that have
// SR-IOV, described by their driver and VF count.
func TestVFCompletion(t *testing.T) {
	cli := &uiodCLI{}
	tr := vfTree(t)
	out, stderr, code := cli.run(t, "--root", tr.Root, "__complete", "vf", "create", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"0000:03:00.0\tigb, 0 of 7 VFs", "0000:00:1f.2\tahci, 0 of 2 VFs"} {
		if !strings.Contains(out, want) {
			t.Errorf("completions lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, pcitest.X540) {
		t.Errorf("a function without SR-IOV offered:\n%s", out)
	}
	if out, _, _ := cli.run(t, "--root", tr.Root, "__complete", "vf", "create", pcitest.Igb82576, ""); strings.Contains(out, "0000:") {
		t.Errorf("the count completed with addresses:\n%s", out)
	}
}
