package virtio

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// TestLegacyOnlyTransitional opens functions without virtio 1.x capabilities: a
// transitional 1af4:1000 is refused with an error that says only the modern transport is
// supported (ErrNotSupported), a modern 1af4:1041 with the missing capability. The
// driver's device list names both ids.
func TestLegacyOnlyTransitional(t *testing.T) {
	tests := []struct {
		device uint16
		want   []string
		is     error
	}{
		{virtiospec.DeviceIDNetTransitional, []string{"transitional virtio-net 1af4:1000", "only the modern virtio 1.x transport is supported", "no common configuration capability"}, pci.ErrNotSupported},
		{virtiospec.DeviceIDNet, []string{"no virtio 1.x capabilities: no common configuration capability"}, nil},
	}
	for _, tt := range tests {
		d, err := sim.New(sim.Config{VendorID: virtiospec.VendorID, DeviceID: tt.device, Class: 0x020000, BAR0Size: 4, MSIXVectors: 3})
		if err != nil {
			t.Fatal(err)
		}
		_, err = nic.Open(d, "auto", nic.Config{})
		if err == nil {
			t.Fatalf("1af4:%04x without capabilities opened", tt.device)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("1af4:%04x: %v, want it to say %q", tt.device, err, w)
			}
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("1af4:%04x: %v is not %v", tt.device, err, tt.is)
		}
		d.Close()
	}
	if s := nic.Supported("virtio"); !strings.Contains(s, "1af4:1041 (virtio-net)") || !strings.Contains(s, "1af4:1000") {
		t.Errorf("supported devices: %s", s)
	}
}
