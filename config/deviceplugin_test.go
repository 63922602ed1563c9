package config

import (
	"strings"
	"testing"
)

// TestPCIEnv: ports name the SR-IOV device plugin's variable; each takes the next
// address; every error names the variable.
func TestPCIEnv(t *testing.T) {
	const v = "PCIDEVICE_INTEL_COM_SRIOV_VFIO"
	cfg := func(pcis ...string) string {
		var b strings.Builder
		b.WriteString("ports:\n")
		for i, p := range pcis {
			b.WriteString("  - {name: p" + string(rune('0'+i)) + ", driver: vfio-pci, pci: \"" + p + "\"}\n")
		}
		b.WriteString("forward: {mode: reflect}\n")
		return b.String()
	}
	tests := []struct {
		name  string
		pcis  []string
		env   []string
		want  []string // the ports' addresses
		error string
	}{
		{"two VFs", []string{"env:" + v, "env:" + v}, []string{v, "0000:03:10.0,0000:03:10.2"}, []string{"0000:03:10.0", "0000:03:10.2"}, ""},
		{"spaces", []string{"env:" + v}, []string{v, " 0000:03:10.4 "}, []string{"0000:03:10.4"}, ""},
		{"mixed with an address", []string{"0000:01:00.0", "env:" + v}, []string{v, "0000:03:10.0"}, []string{"0000:01:00.0", "0000:03:10.0"}, ""},
		{"two resources", []string{"env:PCIDEVICE_A", "env:PCIDEVICE_B"}, []string{"PCIDEVICE_A", "0000:03:10.0", "PCIDEVICE_B", "0000:04:10.0"},
			[]string{"0000:03:10.0", "0000:04:10.0"}, ""},
		{"unset", []string{"env:" + v}, nil, nil, "ports[0].pci = \"env:" + v + "\": $" + v + " is not set or empty"},
		{"empty", []string{"env:" + v, "env:" + v}, []string{v, ""}, nil, "$" + v + " is not set or empty"},
		{"too few", []string{"env:" + v, "env:" + v}, []string{v, "0000:03:10.0"}, nil, "ports[1].pci = \"env:" + v + "\": $" + v + " has 1 addresses, but this is port 2 naming it"},
		{"bad entry", []string{"env:" + v}, []string{v, "03:10"}, nil, "$" + v + " entry 1"},
		{"not a plugin variable", []string{"env:HOME"}, []string{"HOME", "/root"}, nil, "env: must name a device plugin variable PCIDEVICE_<RESOURCE>"},
		{"same VF twice", []string{"env:" + v, "env:" + v}, []string{v, "0000:03:10.0,0000:03:10.0"}, nil, "same function as ports[0].pci"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := read(t, cfg(tt.pcis...), tt.env...)
			if tt.error != "" {
				if err == nil || !strings.Contains(err.Error(), tt.error) {
					t.Fatalf("error %v, want %q", err, tt.error)
				}
				if strings.Count(err.Error(), "ports[0].pci") > 1 {
					t.Errorf("ports[0].pci reported twice: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.want {
				if c.Ports[i].PCI != want {
					t.Errorf("ports[%d].pci = %q, want %q", i, c.Ports[i].PCI, want)
				}
			}
		})
	}
}
