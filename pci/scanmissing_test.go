package pci_test

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcitest"
)

// TestScanMissingLinks: a per-function sysfs entry that is missing, dangling or
// inconsistent where the kernel always has one is listed with an error naming the
// function and the entry; where its absence is normal (no IOMMU at all, vfio's no-IOMMU
// mode), it is not an error. The other functions scan clean either way.
func TestScanMissingLinks(t *testing.T) {
	dev := "sys/bus/pci/devices/" + pcitest.Igb82576
	real := "sys/devices/pci0000:03/" + pcitest.Igb82576
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		want  string // "" for no error
	}{
		{"iommu_group missing, IOMMU on", func(tr *pcitest.Tree) { tr.Remove(dev + "/iommu_group") }, "no iommu_group link"},
		{"iommu_group dangling", func(tr *pcitest.Tree) { tr.Remove("sys/kernel/iommu_groups/3") }, "dangling"},
		{"iommu_group not a link", func(tr *pcitest.Tree) {
			tr.Remove(dev + "/iommu_group")
			tr.WriteFile(real+"/iommu_group", "3\n")
		}, "iommu_group"},
		{"group does not list the function", func(tr *pcitest.Tree) {
			tr.Remove("sys/kernel/iommu_groups/3/devices/" + pcitest.Igb82576)
		}, "do not list it"},
		{"group unreadable", func(tr *pcitest.Tree) {
			tr.Remove("sys/kernel/iommu_groups/3/devices")
			tr.WriteFile("sys/kernel/iommu_groups/3/devices", "")
		}, "IOMMU group 3"},
		{"config missing", func(tr *pcitest.Tree) { tr.Remove(real + "/config") }, "config"},
		{"vendor missing", func(tr *pcitest.Tree) { tr.Remove(real + "/vendor") }, "vendor"},
		{"iommu_group missing, no IOMMU", func(tr *pcitest.Tree) { tr.DropIOMMU() }, ""},
		{"iommu_group missing, vfio no-IOMMU mode", func(tr *pcitest.Tree) {
			tr.Remove(dev + "/iommu_group")
			tr.WriteFile("sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "Y\n")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tt.setup(tr)
			h := &pci.Host{Root: tr.Root}
			list, err := h.Scan(false)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range list {
				switch a := d.Addr.String(); {
				case a == pcitest.Igb82576:
					found = true
					if tt.want == "" {
						if d.Err != nil {
							t.Errorf("error %v, want none", d.Err)
						}
						break
					}
					if d.Err == nil || !strings.Contains(d.Err.Error(), tt.want) || !strings.Contains(d.Err.Error(), a) {
						t.Errorf("error = %v, want one naming %s and %q", d.Err, a, tt.want)
					}
				case a != pcitest.Garbage && d.Err != nil:
					t.Errorf("%s: %v", a, d.Err)
				}
			}
			if !found {
				t.Errorf("%s not listed", pcitest.Igb82576)
			}
		})
	}
}
