package igbvf

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		vendor, device uint16
		want           bool
	}{
		{VendorIntel, 0x10CA, true},
		{VendorIntel, 0x10C9, false}, // the 82576 PF: nic/igb's
		{VendorIntel, 0x1520, false}, // the I350 VF
		{VendorIntel, 0x10ED, false}, // the 82599 VF
		{0x1af4, 0x10CA, false},
	}
	for _, tt := range tests {
		if got := Match(tt.vendor, tt.device); got != tt.want {
			t.Errorf("Match(%04x, %04x) = %v, want %v", tt.vendor, tt.device, got, tt.want)
		}
	}
	d, err := nic.Lookup(VendorIntel, 0x10CA, "auto")
	if err != nil || d.Name != "igbvf" {
		t.Errorf("auto picks %q, %v; want igbvf", d.Name, err)
	}
}

// TestOpenUnsupported checks that a function of another device is refused by name.
func TestOpenUnsupported(t *testing.T) {
	dev, err := sim.New(sim.Config{Addr: pci.MustParseAddr("0000:00:05.0"), VendorID: VendorIntel, DeviceID: 0x10ED, BAR0Size: 0x4000})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, err := Open(dev, nic.Config{}); !errors.Is(err, nic.ErrNoDriver) {
		t.Fatalf("open of 8086:10ed: %v, want ErrNoDriver", err)
	}
}
