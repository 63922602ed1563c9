package virtio

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// patchedDev is a model function whose configuration space and BAR reads a test alters,
// for devices the model does not build.
type patchedDev struct {
	pci.Device
	config func(b []byte, off int64) // alters a configuration-space read in place
	read16 func(off uint32, v uint16) uint16
}

func (d patchedDev) Config() pci.ConfigSpace {
	if d.config == nil {
		return d.Device.Config()
	}
	return patchedConfig{d.Device.Config(), d.config}
}

func (d patchedDev) Region(bar int) (pci.Region, error) {
	r, err := d.Device.Region(bar)
	if err != nil || d.read16 == nil {
		return r, err
	}
	return patchedRegion{r.(NarrowRegion), d.read16}, nil
}

type patchedConfig struct {
	pci.ConfigSpace
	patch func(b []byte, off int64)
}

func (c patchedConfig) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.ConfigSpace.ReadAt(b, off)
	c.patch(b[:n], off)
	return n, err
}

type patchedRegion struct {
	NarrowRegion
	read16 func(off uint32, v uint16) uint16
}

func (r patchedRegion) Read16(off uint32) uint16 { return r.read16(off, r.NarrowRegion.Read16(off)) }

// deviceCapLength patches the length of the device-configuration capability.
func deviceCapLength(n uint32) func(b []byte, off int64) {
	return func(b []byte, off int64) {
		if off != 0 || len(b) < 0x40 {
			return
		}
		for ptr := int(b[pci.CfgCapPointer]); ptr != 0 && ptr+16 <= len(b); ptr = int(b[ptr+1]) {
			if b[ptr] == virtiospec.CapIDVendor && b[ptr+virtiospec.CapOffType] == virtiospec.CapDevice {
				binary.LittleEndian.PutUint32(b[ptr+virtiospec.CapOffLength:], n)
			}
		}
	}
}

// TestInitChecks opens devices that the spec allows or that break its rules in ways the
// driver must check before it sets a queue up.
func TestInitChecks(t *testing.T) {
	tests := []struct {
		name   string
		mc     simvirtio.Config
		cfg    nic.Config
		wrap   func(pci.Device) pci.Device
		before func(*simvirtio.Model)
		want   string // open error, "" to open
	}{
		{"device config without max_virtqueue_pairs, no MQ", simvirtio.Config{MaxPairs: 1}, nic.Config{},
			func(d pci.Device) pci.Device { return patchedDev{Device: d, config: deviceCapLength(8)} }, nil, ""},
		{"device config without max_virtqueue_pairs, MQ", simvirtio.Config{MaxPairs: 2}, nic.Config{},
			func(d pci.Device) pci.Device { return patchedDev{Device: d, config: deviceCapLength(8)} }, nil, "has no max_virtqueue_pairs"},
		{"device config without status", simvirtio.Config{MaxPairs: 1}, nic.Config{},
			func(d pci.Device) pci.Device { return patchedDev{Device: d, config: deviceCapLength(6)} }, nil, "has no status"},
		{"num_queues short of the pairs", simvirtio.Config{MaxPairs: 2, NumQueues: 4}, nic.Config{}, nil, nil,
			"device has 4 virtqueues (num_queues), but 2 queue pairs and the control queue need 5"},
		{"queue enabled before set-up", simvirtio.Config{}, nic.Config{},
			func(d pci.Device) pci.Device {
				return patchedDev{Device: d, read16: func(off uint32, v uint16) uint16 {
					if off == virtiospec.ComQueueEnable {
						return 1
					}
					return v
				}}
			}, nil, "queue_enable reads 1 before set-up"},
		{"config generation never settles", simvirtio.Config{}, nic.Config{}, nil,
			func(m *simvirtio.Model) { m.ChurnGeneration(true) }, "never settles"},
		{"fewer MSI-X vectors than queues", simvirtio.Config{MaxPairs: 2, MSIXVectors: 2}, nic.Config{RxQueues: 2, TxQueues: 2, Interrupts: nic.IRQMSIX}, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := tt.mc
			mc.Strict = true
			m, err := simvirtio.New(mc)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if tt.before != nil {
				tt.before(m)
			}
			dev := m.PCI()
			if tt.wrap != nil {
				dev = tt.wrap(dev)
			}
			cfg := tt.cfg
			if cfg.Interrupts == nic.IRQDefault {
				cfg.Interrupts = nic.IRQNone
			}
			p, err := Open(dev, cfg)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("open: %v, want an error containing %q", err, tt.want)
				}
				if m.Stats().Failed != 1 {
					t.Errorf("FAILED set %d times, want once", m.Stats().Failed)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer p.Close()
			if !p.Link().Up {
				t.Error("link down")
			}
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSharedMSIX opens two queue pairs on a device with two MSI-X vectors: the receive
// queues share the first, configuration changes get the second, and both fire.
func TestSharedMSIX(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{MaxPairs: 2, MSIXVectors: 2}, nic.Config{RxQueues: 2, TxQueues: 2, Interrupts: nic.IRQMSIX}, Options{})
	if kind, ok := p.IRQKind(); !ok || kind != irq.MSIX {
		t.Fatalf("irq kind %v %v, want msix", kind, ok)
	}
	v := p.RxVector(0)
	if p.RxVector(1) != v || v.Index != 0 || p.configVector() == nil || p.configVector().Index != 1 {
		t.Fatalf("vectors: rx %d and %d, config %v", p.RxVector(0).Index, p.RxVector(1).Index, p.configVector())
	}
	testutil.Drain(t, v)
	p.EnableRxInterrupt(1)
	h.Send(1) // steered by the third source-address byte: pair 0
	p.EnableRxInterrupt(0)
	nictest.WaitFired(t, v)
	before := p.LinkChanges()
	h.Virtio().SetLink(false)
	testutil.Eventually(t, 5*time.Second, func() bool { return p.LinkChanges() > before }, "no configuration interrupt on the second vector")
	h.Virtio().SetLink(true)
	h.Consume(0)
}

// TestOrderPlatform: VIRTIO_F_ORDER_PLATFORM is accepted where the ring's barriers are
// the hardware ones (amd64), declined elsewhere.
func TestOrderPlatform(t *testing.T) {
	_, p := openTest(t, simvirtio.Config{OrderPlatform: true}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	if got := p.has(virtiospec.FeatOrderPlat); got != platformOrdered {
		t.Fatalf("ORDER_PLATFORM negotiated %v, want %v", got, platformOrdered)
	}
}
