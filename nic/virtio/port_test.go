package virtio

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestNegotiation checks the features a strict open agrees on in every event-suppression
// mode, and the queue pairs it sets (the shared OpenStrict suite checks the rest).
func TestNegotiation(t *testing.T) {
	for _, m := range eventModes {
		t.Run(m.name, func(t *testing.T) {
			h, p := openTest(t, m.mc, nic.Config{RxQueues: 2, TxQueues: 2, Interrupts: nic.IRQNone}, m.opt)
			vm := h.Virtio()
			if vm.Pairs() != 2 {
				t.Errorf("model pairs %d, want 2", vm.Pairs())
			}
			need := uint64(1)<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatAccessPlat | 1<<virtiospec.FeatMQ | 1<<virtiospec.FeatCtrlVQ | 1<<virtiospec.FeatStatus | 1<<virtiospec.FeatMAC
			if f := vm.Features(); f&need != need || f != p.Features() {
				t.Errorf("features: model %#x, driver %#x, want at least %#x", f, p.Features(), need)
			}
			wantEvent := !m.opt.NoEventIdx && !m.mc.NoEventIdx
			if got := p.has(virtiospec.FeatEventIdx); got != wantEvent {
				t.Errorf("EVENT_IDX negotiated %v, want %v", got, wantEvent)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		mc   simvirtio.Config
		cfg  nic.Config
		want string
		is   error
	}{
		{"more tx than rx queues", simvirtio.Config{}, nic.Config{RxQueues: 1, TxQueues: 2}, "more than rx queues", nil},
		{"more pairs than offered", simvirtio.Config{MaxPairs: 2}, nic.Config{RxQueues: 3}, "rx queues 3: want 1..2", nil},
		{"no multi-queue", simvirtio.Config{MaxPairs: 1}, nic.Config{RxQueues: 2}, "rx queues 2: want 1..1", nil},
		{"buffer too small", simvirtio.Config{}, nic.Config{BufSize: 1024}, "buffer size 1024", nil},
		{"bad ring", simvirtio.Config{}, nic.Config{RxRing: 100}, "rx ring 100", nil},
		{"jumbo mtu without VIRTIO_NET_F_MTU", simvirtio.Config{}, nic.Config{MTU: 9000}, "mtu 9000: the device does not offer VIRTIO_NET_F_MTU", pci.ErrNotSupported},
		{"mtu over the device's", simvirtio.Config{MTU: 1500}, nic.Config{MTU: 9000}, "mtu 9000: more than the device's mtu 1500", pci.ErrNotSupported},
		{"mtu under the device's, buffers too small for its frames", simvirtio.Config{MTU: 9000}, nic.Config{MTU: 4000}, "mtu 4000: below the device's mtu 9000", pci.ErrNotSupported},
		{"jumbo mtu on a device whose frames no buffer holds", simvirtio.Config{MTU: 65535}, nic.Config{MTU: 9000}, "no receive buffer (at most 16384 bytes) holds", pci.ErrNotSupported},
		{"mtu over the driver's", simvirtio.Config{MTU: 65535}, nic.Config{MTU: MaxMTU + 1}, "mtu 9711: want 68..9710", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.mc.Strict = true
			m, err := simvirtio.New(tt.mc)
			if err != nil {
				t.Fatal(err)
			}
			defer m.PCI().Close()
			_, err = Open(m.PCI(), tt.cfg)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("open: %v, want an error containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("open: %v, want %v", err, tt.is)
			}
			if err := m.Device().Err(); err != nil {
				t.Fatalf("model after the failed open: %v", err)
			}
			if n := m.Device().IOMMU().Mappings(); n != 0 {
				t.Fatalf("%d DMA mappings left after the failed open", n)
			}
			if n := m.Stats().Failed; n != 1 {
				t.Fatalf("the driver set FAILED %d times giving up, want once", n)
			}
		})
	}
}

// TestMSIXFallsBackToINTx opens a device without MSI-X (as behind uio): the default mode
// takes INTx, an explicit MSI-X request fails (the shared InterruptModes suite checks the
// choice on a device whose MSI-X enable fails).
func TestMSIXFallsBackToINTx(t *testing.T) {
	_, p := openTest(t, simvirtio.Config{NoMSIX: true}, nic.Config{}, Options{})
	if kind, ok := p.IRQKind(); !ok || kind != irq.INTx {
		t.Fatalf("irq kind %v %v, want intx after MSI-X is not supported", kind, ok)
	}
	m, err := simvirtio.New(simvirtio.Config{NoMSIX: true, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := Open(m.PCI(), nic.Config{Interrupts: nic.IRQMSIX}); !errors.Is(err, pci.ErrNotSupported) {
		t.Fatalf("msix asked for explicitly without MSI-X: %v, want ErrNotSupported", err)
	}
}

func TestRegistered(t *testing.T) {
	m, err := simvirtio.New(simvirtio.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := nic.Open(m.PCI(), "auto", nic.Config{Interrupts: nic.IRQNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Port); !ok {
		t.Fatalf("auto picked %T", p)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint16{virtiospec.DeviceIDNet, virtiospec.DeviceIDNetTransitional} {
		if !Match(virtiospec.VendorID, id) || Name(virtiospec.VendorID, id) != "virtio-net" {
			t.Errorf("1af4:%04x not matched", id)
		}
	}
	if Match(virtiospec.VendorID, 0x1042) || Match(0x8086, virtiospec.DeviceIDNet) {
		t.Error("matched a function that is no virtio-net")
	}
}

// TestLinkDuringClose calls Link from another goroutine (a status page) while the port
// closes: no register may be read after the device is closed.
func TestLinkDuringClose(t *testing.T) {
	for i := 0; i < 200; i++ {
		m, err := simvirtio.New(simvirtio.Config{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Open(m.PCI(), nic.Config{Interrupts: nic.IRQNone, RxRing: 8, TxRing: 8, PoolSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		running := make(chan struct{})
		go func() {
			defer close(done)
			close(running)
			for {
				select {
				case <-stop:
					return
				default:
					p.Link()
				}
			}
		}()
		<-running
		time.Sleep(20 * time.Microsecond) // let it spin
		err = p.Close()
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Device().Err(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}
