package main

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestNotNICForce: --force takes a function that is not a network controller, for bind
// (dry run: the plan names the driver it leaves) and quiesce.
func TestNotNICForce(t *testing.T) {
	cli := &uiodCLI{}
	const storage = "0000:0a:00.0" // a SATA controller already on vfio-pci
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bind", []string{"bind", "--dry-run", "--force", "--driver", "uio_pci_generic", pcitest.SATA}, "# " + pcitest.SATA + ": ahci -> uio_pci_generic"},
		{"quiesce", []string{"quiesce", "--dry-run", "--force", storage}, "# " + storage + " (vfio-pci): command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tr.AddFunction(pcitest.Function{Addr: storage, Vendor: 0x8086, Device: 0x2922, Class: 0x010601, Driver: "vfio-pci", IOMMUGroup: 10})
			out, stderr, code := cli.run(t, append([]string{"--root", tr.Root}, tt.args...)...)
			if code != 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want 0 and %q:\n%s%s", code, tt.want, out, stderr)
			}
		})
	}
}
