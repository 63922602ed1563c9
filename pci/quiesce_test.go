package pci_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcitest"
)

// TestPlanQuiesceRefuses: a function that does not answer, a truncated or missing config
// file, a function of a host driver: no plan, nothing touched.
func TestPlanQuiesceRefuses(t *testing.T) {
	const a = "0000:09:00.0"
	cfg := "sys/devices/pci0000:09/" + a + "/config"
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		addr  string
		is    error
		want  string
	}{
		{"vanished", func(tr *pcitest.Tree) { tr.WriteFile(cfg, strings.Repeat("\xff", 256)) }, a, nil, "does not respond"},
		{"truncated config", func(tr *pcitest.Tree) { tr.WriteFile(cfg, "\x86\x80\xc9") }, a, pci.ErrTruncated, "command"},
		{"no config", func(tr *pcitest.Tree) { tr.Remove(cfg) }, a, nil, "config"},
		{"host driver", nil, pcitest.Igb82576, pci.ErrRefused, "host driver igb"},
		{"missing", nil, "0000:42:00.0", pci.ErrNoDevice, "0000:42:00.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tr.AddFunction(pcitest.Function{Addr: a, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: pci.DriverUIO, IOMMUGroup: 9})
			tr.AddReset(a)
			if tt.setup != nil {
				tt.setup(tr)
			}
			before := tr.Snapshot()
			h := &pci.Host{Root: tr.Root}
			_, err := h.Quiesce(pci.MustParseAddr(tt.addr))
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Quiesce: %v, want %v naming %q", err, tt.is, tt.want)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("a refused quiesce changed the tree")
			}
		})
	}
}
