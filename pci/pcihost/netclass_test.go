package pcihost_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestNetworkClass: CheckNetworkClass and PlanBind refuse a function that is not a
// network controller, naming its class (by name when pci.ids is there) and the driver
// that would lose it; PlanBind takes it with Force; network functions pass.
func TestNetworkClass(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		ids     bool
		unbind  bool // the function has no driver
		wantErr []string
	}{
		{"sata named", pcitest.SATA, true, false, []string{pcitest.SATA, "SATA controller (class 010601)", "not a network controller", "taken from its driver ahci", "--force"}},
		{"sata ids only", pcitest.SATA, false, false, []string{pcitest.SATA, "a function of class 010601", "ahci"}},
		{"bridge", pcitest.Bridge, true, false, []string{"Bridge (class 060400)", "pcieport"}},
		{"sata unbound", pcitest.SATA, true, true, []string{"SATA controller", "has no driver now"}},
		{"nic", pcitest.Igb82576, true, false, nil},
		{"nic unbound", pcitest.Unbound, false, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			if tt.ids {
				tr.InstallPCIIDs()
			}
			if tt.unbind {
				if err := k.WriteFile(tr.Path("sys/bus/pci/drivers/ahci/unbind"), tt.addr); err != nil {
					t.Fatal(err)
				}
			}
			a := pci.MustParseAddr(tt.addr)
			checkErr := h.CheckNetworkClass(a, "bind it to vfio-pci")
			_, planErr := h.PlanBind([]pci.Addr{a}, pcihost.DriverUIO, pcihost.BindOptions{})
			for _, err := range []error{checkErr, planErr} {
				if tt.wantErr == nil {
					if err != nil {
						t.Errorf("refused a network function: %v", err)
					}
					continue
				}
				if !errors.Is(err, pcihost.ErrRefused) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q: %v", s, err)
					}
				}
			}
			if p, err := h.PlanBind([]pci.Addr{a}, pcihost.DriverUIO, pcihost.BindOptions{Force: true}); err != nil || len(p.Devices) != 1 {
				t.Errorf("with Force: %v", err)
			}
		})
	}
	h, _, _ := host(t)
	if err := h.CheckNetworkClass(pci.MustParseAddr("0000:42:00.0"), "quiesce it"); !errors.Is(err, pcihost.ErrNoDevice) {
		t.Errorf("missing function: %v, want ErrNoDevice", err)
	}
}
