package pcitest

import (
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
)

func TestKernelReactions(t *testing.T) {
	tr := Standard(t)
	k := tr.Kernel()
	write := func(rel, v string) error { return k.WriteFile(tr.Path(rel), v) }
	steps := []struct {
		rel, value string
		err        error
		check      func() bool
		what       string
	}{
		{"sys/bus/pci/drivers/ixgbe/unbind", Igb82576, syscall.ENODEV, nil, "unbind from a driver it is not on"},
		{"sys/bus/pci/drivers/igb/bind", Igb82576, syscall.EBUSY, nil, "bind while bound"},
		{"sys/bus/pci/devices/" + Igb82576 + "/driver_override", "vfio-pci", nil,
			func() bool { return tr.ReadFile("sys/bus/pci/devices/"+Igb82576+"/driver_override") == "vfio-pci\n" }, "override stored"},
		{"sys/bus/pci/drivers/igb/unbind", Igb82576, nil, func() bool { return tr.Driver(Igb82576) == "" }, "unbound"},
		{"sys/bus/pci/drivers/igb/bind", Igb82576, syscall.ENODEV, nil, "bind against the override"},
		{"sys/bus/pci/drivers_probe", Igb82576, nil, func() bool { return tr.Driver(Igb82576) == "vfio-pci" }, "probe follows override"},
		{"sys/bus/pci/drivers/vfio-pci/unbind", Igb82576, nil, nil, "unbind from vfio"},
		{"sys/bus/pci/devices/" + Igb82576 + "/driver_override", "\n", nil,
			func() bool { return tr.ReadFile("sys/bus/pci/devices/"+Igb82576+"/driver_override") == "(null)\n" }, "override cleared"},
		{"sys/bus/pci/drivers_probe", Igb82576, nil, func() bool { return tr.Driver(Igb82576) == "igb" }, "probe picks native driver"},
		{"sys/bus/pci/drivers_probe", "0000:42:00.0", syscall.ENODEV, nil, "probe of a missing function"},
		{"sys/bus/pci/drivers/nosuch/bind", Igb82576, nil, nil, "file that does not exist"},
	}
	for _, s := range steps {
		err := write(s.rel, s.value)
		if s.what == "file that does not exist" {
			if err == nil {
				t.Errorf("%s: write created a file", s.what)
			}
			continue
		}
		if !errors.Is(err, s.err) && !(err == nil && s.err == nil) {
			t.Errorf("%s: error %v, want %v", s.what, err, s.err)
		}
		if s.check != nil && !s.check() {
			t.Errorf("%s: kernel did not react", s.what)
		}
	}
	if n := len(k.Writes()); n != len(steps) {
		t.Errorf("%d writes recorded, want %d", n, len(steps))
	}
	k.FailNext("sys/bus/pci/drivers_probe", syscall.EIO)
	if err := write("sys/bus/pci/drivers_probe", Unbound); !errors.Is(err, syscall.EIO) {
		t.Errorf("FailNext: %v", err)
	}
	if err := write("sys/bus/pci/drivers_probe", Unbound); err != nil || tr.Driver(Unbound) != "igb" {
		t.Errorf("write after FailNext: %v, driver %q", err, tr.Driver(Unbound))
	}
}

func TestRouteFormat(t *testing.T) {
	tr := New(t)
	tr.AddRoute("eth0", netip.MustParsePrefix("192.168.0.0/24"))
	tr.AddRoute("eth0", netip.MustParsePrefix("2001:db8::/64"))
	// Lines as Linux prints them on a little-endian host.
	if got := strings.Split(tr.ReadFile("proc/net/route"), "\n")[1]; got != "eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0" {
		t.Errorf("route line %q", got)
	}
	if got := tr.ReadFile("proc/net/ipv6_route"); got != "20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n" {
		t.Errorf("ipv6 route line %q", got)
	}
}

func TestConfigSpaceCapabilities(t *testing.T) {
	c := ConfigSpace(0x8086, 0x10fb, 0x020000, 1, 64)
	var ids []byte
	for p := int(c[0x34]); p != 0; p = int(c[p+1]) {
		ids = append(ids, c[p])
	}
	if string(ids) != "\x01\x05\x11\x10" || c[0x72] != 63 {
		t.Errorf("capabilities %x, MSI-X control %x", ids, c[0x72:0x74])
	}
	c = ConfigSpace(0x8086, 0x1901, 0x060400, 1, 0)
	ids = nil
	for p := int(c[0x34]); p != 0; p = int(c[p+1]) {
		ids = append(ids, c[p])
	}
	if string(ids) != "\x01\x05\x10" {
		t.Errorf("capabilities without MSI-X: %x", ids)
	}
}
