package pcihost_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// sriovHost is the standard host with SR-IOV on the 82576 (igb), the unbound 82576 and
// the SATA controller.
func sriovHost(t *testing.T) (*pcihost.Host, *pcitest.Tree, *pcitest.Kernel) {
	t.Helper()
	h, tr, k := host(t)
	tr.AddSRIOV(pcitest.Igb82576, pcitest.IGB82576VFs)
	tr.AddSRIOV(pcitest.Unbound, pcitest.SRIOV{TotalVFs: 2, Offset: 0x80, Stride: 2, Vendor: 0x8086, Device: 0x10ca})
	tr.AddSRIOV(pcitest.SATA, pcitest.SRIOV{TotalVFs: 2, Offset: 1, Stride: 1, Vendor: 0x8086, Device: 0x2923})
	return h, tr, k
}

func TestPlanVFsRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		pf    string
		n     int
		force bool
		is    error
		want  string
	}{
		{"no such function", nil, "0000:42:00.0", 2, false, pcihost.ErrNoDevice, "0000:42:00.0"},
		{"not a NIC", nil, pcitest.SATA, 2, false, pcihost.ErrRefused, "not a network controller"},
		{"no SR-IOV", nil, pcitest.Port82599A, 2, false, pcihost.ErrRefused, "no SR-IOV capability"},
		{"too many", nil, pcitest.Igb82576, 8, false, pcihost.ErrRefused, "at most 7 VFs (sriov_totalvfs), not 8"},
		{"zero", nil, pcitest.Igb82576, 0, false, pcihost.ErrRefused, "uiod vf remove"},
		{"no PF driver", nil, pcitest.Unbound, 1, false, pcihost.ErrRefused, "has no driver"},
		{"VFs exist", func(tr *pcitest.Tree) { must(t, tr.SetVFs(pcitest.Igb82576, 2)) }, pcitest.Igb82576, 4, false, pcihost.ErrRefused,
			"has 2 VFs: the kernel changes the count only from 0"},
		{"a VF as PF", func(tr *pcitest.Tree) { must(t, tr.SetVFs(pcitest.Igb82576, 1)) }, "0000:03:10.0", 1, true, pcihost.ErrRefused,
			"virtual function of 0000:03:00.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := sriovHost(t)
			check := untouched(t, tr, k, "a refused plan", tt.setup)
			_, err := h.PlanVFs(pci.MustParseAddr(tt.pf), tt.n, pcihost.VFOptions{Force: tt.force})
			if err == nil || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PlanVFs: %v, want %v naming %q", err, tt.is, tt.want)
			}
			check()
		})
	}
}

func TestVFCreateRemove(t *testing.T) {
	h, tr, k := sriovHost(t)
	pf := pci.MustParseAddr(pcitest.Igb82576)
	p, err := h.PlanVFs(pf, 3, pcihost.VFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "# 0000:03:00.0 (igb): 0 VFs -> 3 VFs\necho -n 3 > " + tr.Path("sys/bus/pci/devices/0000:03:00.0/sriov_numvfs") + "\n"
	if p.String() != want {
		t.Errorf("dry run:\n%s\nwant:\n%s", p, want)
	}
	if err := h.Apply(p); err != nil {
		t.Fatal(err)
	}
	s, ok, err := h.SRIOV(pf)
	wantVFs := addrs("0000:03:10.0", "0000:03:10.2", "0000:03:10.4")
	if err != nil || !ok || s.NumVFs != 3 || s.TotalVFs != 7 || !slices.Equal(s.VFs, wantVFs) {
		t.Fatalf("SRIOV = %+v %v %v, want 3 of 7: %v", s, ok, err, wantVFs)
	}
	for _, vf := range wantVFs {
		got, isVF, err := h.PhysFn(vf)
		if err != nil || !isVF || got != pf {
			t.Errorf("PhysFn(%s) = %s %v %v", vf, got, isVF, err)
		}
	}
	if _, isVF, _ := h.PhysFn(pf); isVF {
		t.Error("the PF is a VF")
	}
	// Same count again: nothing to do.
	if p, err := h.PlanVFs(pf, 3, pcihost.VFOptions{}); err != nil || len(p.Writes()) != 0 {
		t.Errorf("again: %v, %d writes", err, len(p.Writes()))
	}
	rm, err := h.PlanRemoveVFs(pf, pcihost.VFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(rm); err != nil {
		t.Fatal(err)
	}
	if tr.NumVFs(pcitest.Igb82576) != 0 || tr.ReadFile("sys/bus/pci/devices/0000:03:10.0/vendor") != "" {
		t.Errorf("after remove: %d VFs", tr.NumVFs(pcitest.Igb82576))
	}
	if n := len(k.Writes()); n != 2 {
		t.Errorf("%d writes, want 2: %v", n, k.Writes())
	}
}

func TestPlanRemoveVFsRefuses(t *testing.T) {
	vf := "0000:03:10.2"
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		force bool
		want  string
	}{
		{"VF on vfio-pci", func(tr *pcitest.Tree) {
			tr.AddDriver(pcihost.DriverVFIO)
			tr.Remove("sys/bus/pci/devices/" + vf + "/driver")
			must(t, tr.Kernel().WriteFile(tr.Path("sys/bus/pci/drivers/vfio-pci/bind"), vf))
		}, false, "VF 0000:03:10.2 is bound to vfio-pci"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, _ := sriovHost(t)
			must(t, tr.SetVFs(pcitest.Igb82576, 2))
			tt.setup(tr)
			before := tr.Snapshot()
			_, err := h.PlanRemoveVFs(pci.MustParseAddr(pcitest.Igb82576), pcihost.VFOptions{Force: tt.force})
			if err == nil || !errors.Is(err, pcihost.ErrRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PlanRemoveVFs: %v, want %q", err, tt.want)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("a refused plan changed the tree")
			}
			if _, err := h.PlanRemoveVFs(pci.MustParseAddr(pcitest.Igb82576), pcihost.VFOptions{Force: true}); err != nil {
				t.Errorf("--force: %v", err)
			}
		})
	}
}

// TestVFCreateRollback: the kernel takes the count but the VFs do not show (a PF driver
// that fails to enable SR-IOV after accepting the write): the count goes back to 0.
func TestVFCreateRollback(t *testing.T) {
	tests := []struct {
		name   string
		inject func(k *pcitest.Kernel, rel string)
		want   string
	}{
		{"write fails", func(k *pcitest.Kernel, rel string) { k.FailWrite(rel, syscall.ENOMEM) }, "create 2 VFs: cannot allocate memory"},
		{"count not taken", func(k *pcitest.Kernel, rel string) { k.IgnoreWrite(rel) }, "verify: sriov_numvfs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := sriovHost(t)
			rel := "sys/bus/pci/devices/" + pcitest.Igb82576 + "/sriov_numvfs"
			p, err := h.PlanVFs(pci.MustParseAddr(pcitest.Igb82576), 2, pcihost.VFOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tt.inject(k, rel)
			err = h.Apply(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "vf 0000:03:00.0") {
				t.Errorf("Apply: %v, want %q", err, tt.want)
			}
			if tr.NumVFs(pcitest.Igb82576) != 0 {
				t.Errorf("%d VFs left", tr.NumVFs(pcitest.Igb82576))
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
