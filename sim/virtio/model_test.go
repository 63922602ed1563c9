package virtio

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// rawDriver pokes the model's BAR4 the way a (possibly wrong) driver would.
type rawDriver struct {
	t *testing.T
	m *Model
	r bar4
}

func newRaw(t *testing.T, cfg Config) *rawDriver {
	cfg.Strict = true
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.PCI().Close() })
	r, err := m.PCI().Region(barIndex)
	if err != nil {
		t.Fatal(err)
	}
	return &rawDriver{t: t, m: m, r: r.(bar4)}
}

func (d *rawDriver) status(v uint8) { d.r.Write8(commonBase+virtiospec.ComStatus, v) }

func (d *rawDriver) features(f uint64) {
	d.r.Write32(commonBase+virtiospec.ComDrvFeatureSel, 0)
	d.r.Write32(commonBase+virtiospec.ComDrvFeature, uint32(f))
	d.r.Write32(commonBase+virtiospec.ComDrvFeatureSel, 1)
	d.r.Write32(commonBase+virtiospec.ComDrvFeature, uint32(f>>32))
}

// protocolFaults returns the messages of the protocol faults recorded so far.
// featuresOK runs the handshake up to FEATURES_OK with goodFeatures (ACKNOWLEDGE is set
// with DRIVER).
func (d *rawDriver) featuresOK() {
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
	d.features(goodFeatures)
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK)
}

func (d *rawDriver) protocolFaults() []string {
	fs, _ := d.m.Device().Faults()
	var msgs []string
	for _, f := range fs {
		if f.Kind == sim.Protocol {
			msgs = append(msgs, f.Msg)
		}
	}
	return msgs
}

const goodFeatures = 1<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatAccessPlat | 1<<virtiospec.FeatMAC

func TestStrictOrdering(t *testing.T) {
	tests := []struct {
		name  string
		drive func(d *rawDriver)
		fault string // "" = none
	}{
		{"handshake in order", func(d *rawDriver) {
			d.status(virtiospec.StatusAcknowledge)
			d.featuresOK()
			d.r.Write16(commonBase+virtiospec.ComQueueSelect, 0)
		}, ""},
		{"queue select before FEATURES_OK", func(d *rawDriver) {
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
			d.r.Write16(commonBase+virtiospec.ComQueueSelect, 0)
		}, "before FEATURES_OK"},
		{"queue size read before FEATURES_OK", func(d *rawDriver) {
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
			d.r.Read16(commonBase + virtiospec.ComQueueSize)
		}, "before FEATURES_OK"},
		{"features after FEATURES_OK", func(d *rawDriver) {
			d.featuresOK()
			d.features(goodFeatures | 1<<virtiospec.FeatStatus)
		}, "driver features written"},
		{"DRIVER before ACKNOWLEDGE", func(d *rawDriver) { d.status(virtiospec.StatusDriver) }, "out of order"},
		{"status bits cleared", func(d *rawDriver) {
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
			d.status(virtiospec.StatusAcknowledge)
		}, "without a reset"},
		{"notify before DRIVER_OK", func(d *rawDriver) {
			d.featuresOK()
			d.r.Write16(notifyBase, 0)
		}, "before DRIVER_OK"},
		{"32-bit access to a 16-bit field", func(d *rawDriver) { d.r.Read32(commonBase + virtiospec.ComMSIXConfig) }, "4-byte access"},
		{"queue size not a power of two", func(d *rawDriver) {
			d.featuresOK()
			d.r.Write16(commonBase+virtiospec.ComQueueSize, 100)
		}, "size 100"},
		{"enable without rings", func(d *rawDriver) {
			d.featuresOK()
			d.r.Write16(commonBase+virtiospec.ComQueueEnable, 1)
		}, "without ring addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newRaw(t, Config{})
			tt.drive(d)
			got := d.protocolFaults()
			if tt.fault == "" {
				if len(got) != 0 || d.m.Device().Err() != nil {
					t.Fatalf("faults %q", got)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(got[0], tt.fault) {
				t.Fatalf("faults %q, want one containing %q", got, tt.fault)
			}
			if d.m.Device().Err() == nil {
				t.Fatal("strict model reports no error")
			}
		})
	}
}

func TestFeaturesRefused(t *testing.T) {
	tests := []struct {
		name string
		f    uint64
	}{
		{"without VERSION_1", goodFeatures &^ (1 << virtiospec.FeatVersion1)},
		{"without ACCESS_PLATFORM", goodFeatures &^ (1 << virtiospec.FeatAccessPlat)},
		{"not offered", goodFeatures | 1<<40},
		{"MQ without CTRL_VQ", goodFeatures | 1<<virtiospec.FeatMQ},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newRaw(t, Config{})
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
			d.features(tt.f)
			d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK)
			if s := d.r.Read8(commonBase + virtiospec.ComStatus); s&virtiospec.StatusFeaturesOK != 0 {
				t.Fatalf("features %#x accepted (status 0x%02x)", tt.f, s)
			}
		})
	}
}

func TestResetClearsState(t *testing.T) {
	d := newRaw(t, Config{})
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
	d.features(goodFeatures)
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK)
	d.r.Write16(commonBase+virtiospec.ComQueueSelect, 1)
	d.r.Write16(commonBase+virtiospec.ComQueueSize, 64)
	d.status(0)
	if s := d.r.Read8(commonBase + virtiospec.ComStatus); s != 0 {
		t.Fatalf("status 0x%02x after reset", s)
	}
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver)
	d.features(goodFeatures)
	d.status(virtiospec.StatusAcknowledge | virtiospec.StatusDriver | virtiospec.StatusFeaturesOK)
	d.r.Write16(commonBase+virtiospec.ComQueueSelect, 1)
	if n := d.r.Read16(commonBase + virtiospec.ComQueueSize); n != 256 {
		t.Fatalf("queue size %d after reset, want 256", n)
	}
	if got := d.protocolFaults(); len(got) != 0 {
		t.Fatalf("faults %q", got)
	}
}

func TestCapabilities(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.PCI().Close()
	cfg := make([]byte, 256)
	if _, err := m.PCI().Config().ReadAt(cfg, 0); err != nil {
		t.Fatal(err)
	}
	var types []byte
	for ptr := int(cfg[pci.CfgCapPointer]); ptr != 0; ptr = int(cfg[ptr+1]) {
		if cfg[ptr] == 0x09 {
			types = append(types, cfg[ptr+3])
		} else {
			types = append(types, 0xf0|cfg[ptr]&0xf)
		}
	}
	// common, ISR, device, MSI-X (0x11 → 0xf1), notify.
	if string(types) != string([]byte{1, 3, 4, 0xf1, 2}) {
		t.Fatalf("capability chain %x", types)
	}
	// The capabilities are read-only.
	m.PCI().Config().WriteAt([]byte{0xee}, capCommonAt+capOffBARTest)
	m.PCI().Config().ReadAt(cfg, 0)
	if cfg[capCommonAt+capOffBARTest] != barIndex {
		t.Fatal("a capability was writable")
	}
}

const capOffBARTest = 4

func TestNoMSIX(t *testing.T) {
	m, err := New(Config{NoMSIX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.PCI().Close()
	if _, err := m.PCI().IRQs(irq.MSIX, 2); !errors.Is(err, pci.ErrNotSupported) {
		t.Fatalf("msix: %v", err)
	}
	if vs, err := m.PCI().IRQs(irq.INTx, 1); err != nil || len(vs) != 1 {
		t.Fatalf("intx: %v %v", vs, err)
	}
}

func TestNewPair(t *testing.T) {
	p, err := NewPair(Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ms := p.Models
	if ms[0].PCI().DMA() != ms[1].PCI().DMA() || ms[0].Device().IOMMU() != p.IOMMU {
		t.Error("the pair does not share one address space")
	}
	if got := []string{ms[0].MAC().String(), ms[1].MAC().String()}; got[0] != "52:54:00:12:34:56" || got[1] != "52:54:00:12:34:57" {
		t.Errorf("MACs %v, want QEMU's and one higher", got)
	}
	if ms[0].PCI().Addr() == ms[1].PCI().Addr() {
		t.Errorf("the pair shares address %v", ms[0].PCI().Addr())
	}
}

// TestMTUConfig checks that Config.MTU offers VIRTIO_NET_F_MTU with that mtu in the device
// configuration, that without it the feature is not offered, and that an MTU the field
// cannot hold (or below IPv4's minimum) is refused.
func TestMTUConfig(t *testing.T) {
	tests := []struct {
		mtu     int
		offered bool
		field   uint32
		err     bool
	}{
		{0, false, 1500, false},
		{1500, true, 1500, false},
		{9000, true, 9000, false},
		{65535, true, 65535, false},
		{67, false, 0, true},
		{65536, false, 0, true},
	}
	for _, tt := range tests {
		m, err := New(Config{MTU: tt.mtu, Strict: true})
		if tt.err {
			if err == nil {
				m.Close()
				t.Errorf("mtu %d accepted", tt.mtu)
			}
			continue
		}
		if err != nil {
			t.Fatalf("mtu %d: %v", tt.mtu, err)
		}
		if got := m.offered&(1<<virtiospec.FeatMTU) != 0; got != tt.offered {
			t.Errorf("mtu %d: VIRTIO_NET_F_MTU offered %v, want %v", tt.mtu, got, tt.offered)
		}
		if got := m.readNetConfig(virtiospec.NetCfgMTU, 2); got != tt.field {
			t.Errorf("mtu %d: mtu field %d, want %d", tt.mtu, got, tt.field)
		}
		m.Close()
	}
}
