package guest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// TestGuestVF drives Linux's igb PF driver through uiod vf on QEMU's igb, whose SR-IOV
// capability offers 8 VFs, of which igb allows 7 (sriov_totalvfs): a dry run, create 2 (the kernel makes the VFs), the refusal of
// a second create, the list and devices views, a VF's quiesce by its function-level reset
// (reset_method flr, restored), a VF bound to vfio-pci and given back, and remove.
func TestGuestVF(t *testing.T) {
	pf, _ := guestNICs(t)
	if os.Getenv("UIOD_GUEST_REMOVAL") != "1" {
		t.Skip("runs in the boot of TestIntegrationRemoval* (UIOD_GUEST_REMOVAL=1)")
	}
	if d := driverOf(t, pf); d != "igb" {
		t.Fatalf("%s is on %q, want igb (the PF driver creates the VFs)", pf, d)
	}
	numvfs := filepath.Join("/sys/bus/pci/devices", pf, "sriov_numvfs")
	if out := mustUIOD(t, "vf", "create", "--dry-run", pf, "2"); !strings.Contains(out, "echo -n 2 > "+numvfs) {
		t.Errorf("dry run:\n%s", out)
	}
	out := mustUIOD(t, "vf", "create", pf, "2")
	t.Logf("uiod vf create %s 2:\n%s", pf, out)
	defer func() {
		if out, code := uiod(t, "vf", "remove", "--force", pf); code != 0 {
			t.Errorf("uiod vf remove --force: exit %d\n%s", code, out)
		}
	}()
	if out, code := uiod(t, "vf", "create", pf, "3"); code != 2 || !strings.Contains(out, "remove them first") {
		t.Errorf("second create: exit %d\n%s", code, out)
	}
	var pfs []pcihost.DeviceInfo
	if err := json.Unmarshal([]byte(mustUIOD(t, "vf", "list", "--json", pf)), &pfs); err != nil || len(pfs) != 1 || pfs[0].SRIOV == nil {
		t.Fatalf("vf list --json: %v %+v", err, pfs)
	}
	s := pfs[0].SRIOV
	t.Logf("PF %s: %d of %d VFs: %v", pf, s.NumVFs, s.TotalVFs, s.VFs)
	if s.NumVFs != 2 || s.TotalVFs != 7 || len(s.VFs) != 2 {
		t.Fatalf("vf list: %+v, want 2 of 7 (igb caps the 82576 at 7)", *s)
	}
	vf := s.VFs[0].String()
	devs := mustUIOD(t, "devices", vf)
	t.Logf("uiod devices %s: %s", vf, strings.TrimSpace(devs))
	if !strings.Contains(devs, "pf="+pf) {
		t.Errorf("uiod devices does not show the VF's PF:\n%s", devs)
	}
	methodFile := filepath.Join("/sys/bus/pci/devices", vf, "reset_method")
	method, _ := os.ReadFile(methodFile)
	out = mustUIOD(t, "quiesce", "--dry-run", vf)
	t.Logf("reset_method %q; uiod quiesce --dry-run:\n%s", strings.TrimSpace(string(method)), out)
	if !strings.Contains(out, "function-level reset") {
		t.Errorf("quiesce of a VF does not use its function-level reset:\n%s", out)
	}
	t.Logf("uiod quiesce %s: %s", vf, mustUIOD(t, "quiesce", vf))
	if after, _ := os.ReadFile(methodFile); string(after) != string(method) {
		t.Errorf("reset_method %q after quiesce, was %q", after, method)
	}
	if cmd := commandRegister(t, vf); cmd&pci.CmdBusMaster != 0 {
		t.Errorf("VF command %#04x after quiesce: bus mastering on", cmd)
	}
	t.Logf("uiod bind --driver vfio-pci %s:\n%s", vf, mustUIOD(t, "bind", "--driver", pcihost.DriverVFIO, vf))
	if d := driverOf(t, vf); d != pcihost.DriverVFIO {
		t.Errorf("VF on %q after bind, want vfio-pci", d)
	}
	if out, code := uiod(t, "vf", "remove", pf); code != 2 || !strings.Contains(out, "is bound to vfio-pci") {
		t.Errorf("remove with a VF on vfio-pci: exit %d\n%s", code, out)
	}
	t.Logf("uiod unbind --restore %s:\n%s", vf, mustUIOD(t, "unbind", "--restore", vf))
	t.Logf("uiod vf remove %s:\n%s", pf, mustUIOD(t, "vf", "remove", pf))
	if b, _ := os.ReadFile(numvfs); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("sriov_numvfs %q after remove", b)
	}
}
