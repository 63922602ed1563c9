package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestFunctionArgs runs the commands that take PCI functions on the fixture tree. devices
// ADDR... and --driver NAME list only the functions named (by address or interface, of
// any class) or bound to NAME. bind, unbind and quiesce take interface names as
// dpdk-devbind does, each acting on the function the name resolves to through
// sys/class/net under --root (dry runs; quiesce refuses the host driver of the function
// it resolved). A function that does not exist and a name that is no interface exit 2
// naming it; the tree is left as it was.
func TestFunctionArgs(t *testing.T) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	tests := []struct {
		args     []string
		code     int
		want     []string
		unwanted []string
	}{
		{[]string{"devices", pcitest.Port82599B, "ens3f0"}, 0, []string{pcitest.Port82599B + " ", pcitest.Igb82576 + " "},
			[]string{pcitest.Port82599A, pcitest.X540, pcitest.Virtio}},
		{[]string{"devices", "03:00.0"}, 0, []string{pcitest.Igb82576 + " ", "drv=igb"}, []string{pcitest.Unbound}},
		{[]string{"devices", pcitest.SATA}, 0, []string{pcitest.SATA + " ", "drv=ahci"}, []string{pcitest.Igb82576}},
		{[]string{"devices", "ens5"}, 0, []string{pcitest.Virtio + " ", "if=ens5"}, []string{pcitest.Igb82576}},
		{[]string{"devices", "--driver", "ixgbe"}, 0, []string{pcitest.Port82599A, pcitest.Port82599B, pcitest.X540}, []string{pcitest.Igb82576, pcitest.I350, pcitest.Virtio}},
		{[]string{"devices", "--driver", "vfio-pci"}, 0, []string{pcitest.I350, "using a userspace driver"}, []string{pcitest.Port82599A}},
		{[]string{"devices", "--driver", "none"}, 0, []string{pcitest.Unbound, "without a driver"}, []string{pcitest.Port82599A, pcitest.I350}},
		{[]string{"devices", "--driver", "igb", "eth0", pcitest.Igb82576}, 0, []string{pcitest.Igb82576}, []string{pcitest.Port82599A}},
		{[]string{"devices", "--driver", "e1000e"}, 0, []string{"No network devices found"}, []string{pcitest.Port82599A}},
		{[]string{"devices", "0000:42:00.0"}, 2, []string{"0000:42:00.0", "no such PCI device"}, nil},
		{[]string{"devices", "ens9"}, 2, []string{`"ens9"`, "network interface", "sys/class/net/ens9"}, nil},
		{[]string{"devices", "--driver", "../x"}, 2, []string{"--driver", "../x"}, nil},
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens3f0"}, 0,
			[]string{"# 0000:03:00.0: igb -> vfio-pci", "echo -n 0000:03:00.0 > " + tr.Path("sys/bus/pci/drivers/igb/unbind")}, nil},
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens5"}, 0, []string{"# 0000:05:00.0: virtio-pci -> vfio-pci"}, nil},
		{[]string{"unbind", "--dry-run", "ens3f0"}, 0, []string{"echo -n 0000:03:00.0 > " + tr.Path("sys/bus/pci/drivers/igb/unbind")}, nil},
		{[]string{"quiesce", "--dry-run", "ens3f0"}, 2, []string{"0000:03:00.0", "igb"}, nil},
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens9"}, 2, []string{`"ens9"`, "network interface"}, nil},
		{[]string{"unbind", "--dry-run", "ens9"}, 2, []string{`"ens9"`, "network interface"}, nil},
		{[]string{"quiesce", "--dry-run", "ens9"}, 2, []string{`"ens9"`, "network interface"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := runWants(t, append([]string{"--root", tr.Root}, tt.args...), tt.code, tt.want...)
			for _, u := range tt.unwanted { // a line of the function (it may be in an IOMMU group list)
				if strings.Contains(out, u+" '") {
					t.Errorf("output has %q:\n%s", u, out)
				}
			}
		})
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the tree changed")
	}
}

// runWants runs the uiod binary with args, checks it exits code, and that its output
// (stdout, or stderr when it fails) has each of want; it returns that output.
func runWants(t *testing.T, args []string, code int, want ...string) string {
	t.Helper()
	stdout, stderr, got := runUIOD(t, "", nil, args...)
	if got != code {
		t.Fatalf("exit %d, want %d\n%s%s", got, code, stdout, stderr)
	}
	out := stdout
	if code != 0 {
		out = stderr
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	return out
}
