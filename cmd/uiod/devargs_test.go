package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcitest"
)

// TestDevicesFilter runs `uiod devices ADDR...` and `--driver NAME` on the fixture tree:
// only the functions named (by address or interface, of any class) or bound to NAME are
// listed; a function that does not exist and an unknown name exit 2 naming it.
func TestDevicesFilter(t *testing.T) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	tests := []struct {
		args     []string
		code     int
		want     []string
		unwanted []string
	}{
		{[]string{pcitest.Port82599B, "ens3f0"}, 0, []string{pcitest.Port82599B + " ", pcitest.Igb82576 + " "},
			[]string{pcitest.Port82599A, pcitest.X540, pcitest.Virtio}},
		{[]string{"03:00.0"}, 0, []string{pcitest.Igb82576 + " ", "drv=igb"}, []string{pcitest.Unbound}},
		{[]string{pcitest.SATA}, 0, []string{pcitest.SATA + " ", "drv=ahci"}, []string{pcitest.Igb82576}},
		{[]string{"ens5"}, 0, []string{pcitest.Virtio + " ", "if=ens5"}, []string{pcitest.Igb82576}},
		{[]string{"--driver", "ixgbe"}, 0, []string{pcitest.Port82599A, pcitest.Port82599B, pcitest.X540}, []string{pcitest.Igb82576, pcitest.I350, pcitest.Virtio}},
		{[]string{"--driver", "vfio-pci"}, 0, []string{pcitest.I350, "using a userspace driver"}, []string{pcitest.Port82599A}},
		{[]string{"--driver", "none"}, 0, []string{pcitest.Unbound, "without a driver"}, []string{pcitest.Port82599A, pcitest.I350}},
		{[]string{"--driver", "igb", "eth0", pcitest.Igb82576}, 0, []string{pcitest.Igb82576}, []string{pcitest.Port82599A}},
		{[]string{"--driver", "e1000e"}, 0, []string{"No network devices found"}, []string{pcitest.Port82599A}},
		{[]string{"0000:42:00.0"}, 2, []string{"0000:42:00.0", "no such PCI device"}, nil},
		{[]string{"ens9"}, 2, []string{`"ens9"`, "network interface", "sys/class/net/ens9"}, nil},
		{[]string{"--driver", "../x"}, 2, []string{"--driver", "../x"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runUIOD(t, "", nil, append([]string{"--root", tr.Root, "devices"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			out := stdout
			if tt.code != 0 {
				out = stderr
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
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

// TestInterfaceArgs runs bind, unbind and quiesce with interface names as dpdk-devbind
// takes them: each acts on the function the name resolves to through sys/class/net
// under --root (dry runs; quiesce refuses the host driver of the function it resolved),
// and a name that is no interface exits 2 naming it, with the tree untouched.
func TestInterfaceArgs(t *testing.T) {
	tr := pcitest.Standard(t)
	before := tr.Snapshot()
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens3f0"}, 0,
			[]string{"# 0000:03:00.0: igb -> vfio-pci", "echo -n 0000:03:00.0 > " + tr.Path("sys/bus/pci/drivers/igb/unbind")}},
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens5"}, 0, []string{"# 0000:05:00.0: virtio-pci -> vfio-pci"}},
		{[]string{"unbind", "--dry-run", "ens3f0"}, 0, []string{"echo -n 0000:03:00.0 > " + tr.Path("sys/bus/pci/drivers/igb/unbind")}},
		{[]string{"quiesce", "--dry-run", "ens3f0"}, 2, []string{"0000:03:00.0", "igb"}},
		{[]string{"bind", "--dry-run", "--driver", "vfio-pci", "ens9"}, 2, []string{`"ens9"`, "network interface"}},
		{[]string{"unbind", "--dry-run", "ens9"}, 2, []string{`"ens9"`, "network interface"}},
		{[]string{"quiesce", "--dry-run", "ens9"}, 2, []string{`"ens9"`, "network interface"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runUIOD(t, "", nil, append([]string{"--root", tr.Root}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
		})
	}
	if !maps.Equal(before, tr.Snapshot()) {
		t.Error("the tree changed")
	}
}
