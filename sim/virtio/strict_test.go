package virtio

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// TestAccessPlatformOption: a model without ACCESS_PLATFORM does not offer it and accepts
// a driver without it; one with it refuses such a driver. Without the feature the device
// bypasses the IOMMU: its DMA works only on physical addresses.
func TestAccessPlatformOption(t *testing.T) {
	without := uint64(goodFeatures &^ (1 << virtiospec.FeatAccessPlat))
	tests := []struct {
		name     string
		cfg      Config
		features uint64
		accepted bool
	}{
		{"offered, taken", Config{}, goodFeatures, true},
		{"offered, declined", Config{}, without, false},
		{"not offered, declined", Config{NoAccessPlatform: true}, without, true},
		{"not offered, taken", Config{NoAccessPlatform: true}, goodFeatures, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newRaw(t, tt.cfg)
			d.r.Write32(commonBase+virtiospec.ComDevFeatureSel, 1)
			offered := d.r.Read32(commonBase+virtiospec.ComDevFeature)&(1<<(virtiospec.FeatAccessPlat-32)) != 0
			if offered == tt.cfg.NoAccessPlatform {
				t.Fatalf("ACCESS_PLATFORM offered %v with NoAccessPlatform %v", offered, tt.cfg.NoAccessPlatform)
			}
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
			d.features(tt.features)
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK)
			if s := d.r.Read8(commonBase + virtiospec.ComStatus); (s&virtiospec.StatusFeaturesOK != 0) != tt.accepted {
				t.Fatalf("features %#x: status 0x%02x, want accepted %v", tt.features, s, tt.accepted)
			}
		})
	}
}

// TestBypassDMA: without ACCESS_PLATFORM the device's DMA to an IOVA of a translating
// IOMMU is a fault; to a physical address space it goes through.
func TestBypassDMA(t *testing.T) {
	for _, physical := range []bool{false, true} {
		iommu := sim.NewIOMMU()
		if physical {
			iommu = sim.NewPhysicalIOMMU()
		}
		d := newRaw(t, Config{NoAccessPlatform: true, IOMMU: iommu})
		mem, err := d.m.PCI().DMA().Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		if err := pci.SetBusMaster(d.m.PCI().Config(), true); err != nil {
			t.Fatal(err)
		}
		d.m.dev.Lock()
		_, err = d.m.dmaAt(mem.IOVA, 8, "test")
		d.m.dev.Unlock()
		if (err == nil) != physical {
			t.Errorf("physical %v: DMA error %v", physical, err)
		}
		if !physical && d.m.Device().Err() == nil {
			t.Error("bypassing DMA to an IOVA recorded no fault")
		}
	}
}

// TestRaiseNeedsReset: the device sets DEVICE_NEEDS_RESET on demand, notifies a
// configuration change, ignores notifications without a fault until the reset, and the
// reset clears it.
func TestRaiseNeedsReset(t *testing.T) {
	d := newRaw(t, Config{NoMSIX: true})
	d.featuresOK()
	ok := uint8(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK | virtiospec.StatusDriverOK)
	d.status(ok)
	d.m.RaiseNeedsReset()
	if s := d.r.Read8(commonBase + virtiospec.ComStatus); s != ok|virtiospec.StatusNeedsReset {
		t.Fatalf("status 0x%02x, want 0x%02x", s, ok|virtiospec.StatusNeedsReset)
	}
	if isr := d.r.Read8(isrBase); isr&virtiospec.ISRConfig == 0 {
		t.Fatalf("isr 0x%02x: no configuration change", isr)
	}
	d.r.Write16(notifyBase, 0)
	if got := d.protocolFaults(); len(got) != 0 {
		t.Fatalf("faults %q", got)
	}
	if st := d.m.Stats(); st.NeedsReset != 1 || st.IgnoredNotify != 1 {
		t.Fatalf("stats %+v", st)
	}
	d.status(0)
	if s := d.r.Read8(commonBase + virtiospec.ComStatus); s != 0 {
		t.Fatalf("status 0x%02x after reset", s)
	}
}
