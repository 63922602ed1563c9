package main

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcitest"
)

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
