package mcast

import (
	"net"
	"strings"
	"testing"
)

func TestCheckGroups(t *testing.T) {
	ok := []net.HardwareAddr{{0x33, 0x33, 0, 0, 0, 1}, {0x01, 0x00, 0x5e, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	if err := CheckGroups(ok); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bad  net.HardwareAddr
		name string
	}{{net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, "02:00:00:00:00:01"}, {net.HardwareAddr{0x33, 0x33, 0}, "33:33:00"}, {nil, `""`}} {
		err := CheckGroups(append(ok[:1:1], c.bad))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), "group 1") {
			t.Errorf("%v: error %v, want one naming it", c.bad, err)
		}
	}
}

func TestCheckMAC(t *testing.T) {
	if err := CheckMAC(net.HardwareAddr{0x02, 1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []net.HardwareAddr{{0x33, 0x33, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0}, {2, 1}} {
		if err := CheckMAC(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestUnique(t *testing.T) {
	a, b := net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, net.HardwareAddr{0x33, 0x33, 0, 0, 0, 2}
	got := Unique([]net.HardwareAddr{a, b, a, b, a})
	if len(got) != 2 || got[0].String() != a.String() || got[1].String() != b.String() {
		t.Fatalf("Unique: %v", got)
	}
	got[0][5] = 9
	if a[5] != 1 {
		t.Error("Unique shares memory with its argument")
	}
}
