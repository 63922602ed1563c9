package pcihost_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestInterfaceAddr resolves interface names through sys/class/net under the root as
// dpdk-devbind does: a function's interface, virtio-net's (whose device is virtio0 under
// the function), and refusals naming what is wrong for an unknown name, an interface on
// no PCI function, a name that is a path, and a link that leads out of the root.
func TestInterfaceAddr(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.WriteFile("sys/devices/virtual/net/lo/address", "00:00:00:00:00:00\n")
	link := func(rel, target string) {
		if err := os.MkdirAll(filepath.Dir(tr.Path(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, tr.Path(rel)); err != nil {
			t.Fatal(err)
		}
	}
	link("sys/class/net/lo", "../../devices/virtual/net/lo")
	link("sys/class/net/evil", "../../../../../../../../etc")
	tr.WriteFile("sys/devices/platform/soc0/net/plat0/address", "00:00:00:00:00:01\n")
	link("sys/devices/platform/soc0/net/plat0/device", "../../../soc0")
	link("sys/class/net/plat0", "../../devices/platform/soc0/net/plat0")
	h, err := pcihost.New(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"eth0", pcitest.Port82599A, nil},
		{"eth1", pcitest.Port82599B, nil},
		{"ens3f0", pcitest.Igb82576, nil},
		{"ens5", pcitest.Virtio, nil},
		{"ens9", "", pcihost.ErrNoInterface},
		{"lo", "", pcihost.ErrNoInterface},
		{"plat0", "", pcihost.ErrNoInterface},
		{"../../bus", "", pcihost.ErrNoInterface},
		{"", "", pcihost.ErrNoInterface},
		{"averyveryverylongname", "", pcihost.ErrNoInterface},
		{"evil", "", pcihost.ErrOutsideRoot},
	}
	for _, tt := range tests {
		a, err := h.InterfaceAddr(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("InterfaceAddr(%q) = %v, %v; want %v", tt.in, a, err, tt.wantErr)
			}
			continue
		}
		if err != nil || a.String() != tt.want {
			t.Errorf("InterfaceAddr(%q) = %v, %v; want %s", tt.in, a, err, tt.want)
		}
	}
}

// TestParseFunction takes an address in either form or an interface name; anything else
// is ErrBadAddr naming both readings.
func TestParseFunction(t *testing.T) {
	tr := pcitest.Standard(t)
	h, err := pcihost.New(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		{"0000:03:00.0", pcitest.Igb82576},
		{"03:00.0", pcitest.Igb82576},
		{"ens3f0", pcitest.Igb82576},
		{"ens5", pcitest.Virtio},
	} {
		if a, err := h.ParseFunction(tt.in); err != nil || a.String() != tt.want {
			t.Errorf("ParseFunction(%q) = %v, %v; want %s", tt.in, a, err, tt.want)
		}
	}
	for _, in := range []string{"ens9", "0000:03:00", "x/y"} {
		_, err := h.ParseFunction(in)
		if !errors.Is(err, pci.ErrBadAddr) {
			t.Errorf("ParseFunction(%q): %v, want ErrBadAddr", in, err)
		}
	}
}
