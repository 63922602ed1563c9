package nic_test

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/drivers" // registers every driver
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/simnic"
	"github.com/uiod/uiod/wire"
)

// idCounter is a device whose configuration space counts the reads of the vendor id
// register (offset 0), which every identification reads.
type idCounter struct {
	pci.Device
	cfg idReads
}

func (d *idCounter) Config() pci.ConfigSpace { return &d.cfg }

type idReads struct {
	pci.ConfigSpace
	n int
}

func (c *idReads) ReadAt(p []byte, off int64) (int, error) {
	if off <= 0 && off+int64(len(p)) > 0 {
		c.n++
	}
	return c.ConfigSpace.ReadAt(p, off)
}

// TestOpenDriverIdentifiesOnce opens a model of each driver's device through
// nic.OpenDriver and checks that the function is identified once per open: one read of
// its id registers when the caller knows nothing, none when the caller passes the ids it
// read (as the daemon does from sysfs), and that the driver returned is the one that
// opened the port.
func TestOpenDriverIdentifiesOnce(t *testing.T) {
	for _, tt := range []struct {
		model, nic string
	}{
		{simnic.Ixgbe, "auto"},
		{simnic.IGB, "igb"},
		{simnic.IGBVF, "auto"},
		{simnic.Virtio, "virtio"},
	} {
		for _, known := range []bool{false, true} {
			far, cable := wire.Pair()
			m, err := simnic.New(tt.model, simnic.Config{Addr: pci.MustParseAddr("0000:02:00.0"), Wire: cable, Strict: true, QueueSize: 256})
			if err != nil {
				t.Fatal(err)
			}
			var id nic.DeviceID
			if known {
				if id.Vendor, id.Device, err = pci.ReadIDs(m.PCI().Config()); err != nil {
					t.Fatal(err)
				}
			}
			dev := &idCounter{Device: m.PCI()}
			dev.cfg.ConfigSpace = m.PCI().Config()
			p, d, err := nic.OpenDriver(dev, id, tt.nic, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone})
			if err != nil {
				t.Fatalf("%s: %v", tt.model, err)
			}
			want := 1
			if known {
				want = 0
			}
			if dev.cfg.n != want {
				t.Errorf("%s (ids known %v): %d reads of the vendor id, want %d", tt.model, known, dev.cfg.n, want)
			}
			if d.Name != tt.model {
				t.Errorf("%s: opened by driver %q", tt.model, d.Name)
			}
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			if err := m.Device().Err(); err != nil {
				t.Errorf("%s: strict model: %v", tt.model, err)
			}
			m.Close()
			far.Close()
		}
	}
}

// TestOpenDriverRefuses checks that a device no driver supports, or one the named
// driver does not, is refused before any driver touches it, with an error naming the
// device and wrapping nic.ErrNoDriver.
func TestOpenDriverRefuses(t *testing.T) {
	far, cable := wire.Pair()
	defer far.Close()
	m, err := simnic.New(simnic.Virtio, simnic.Config{Addr: pci.MustParseAddr("0000:02:00.0"), Wire: cable, QueueSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tt := range []struct {
		id   nic.DeviceID
		name string
		want string
	}{
		{nic.DeviceID{}, "ixgbe", "0000:02:00.0: unsupported device 1af4:1041 for driver ixgbe"},
		{nic.DeviceID{Vendor: 0x1234, Device: 0x5678}, "auto", "0000:02:00.0: unsupported device 1234:5678, supported are"},
		{nic.DeviceID{}, "e1000", `0000:02:00.0: unknown NIC driver "e1000"`},
	} {
		p, _, err := nic.OpenDriver(m.PCI(), tt.id, tt.name, nic.Config{Interrupts: nic.IRQNone})
		if err == nil {
			p.Close()
			t.Fatalf("%v %s: opened", tt.id, tt.name)
		}
		if !errors.Is(err, nic.ErrNoDriver) || len(err.Error()) < len(tt.want) || err.Error()[:len(tt.want)] != tt.want {
			t.Errorf("%v %s: %v, want %s… wrapping ErrNoDriver", tt.id, tt.name, err, tt.want)
		}
	}
}
