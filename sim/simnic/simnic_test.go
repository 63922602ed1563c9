package simnic_test

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/drivers" // registers every driver
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/sim/simnic"
	"github.com/uiod/uiod/sim/virtio"
	"github.com/uiod/uiod/wire"
)

// TestNew checks that each name builds its model and that PCI is the function the
// driver of that name opens.
func TestNew(t *testing.T) {
	tests := []struct {
		name  string
		check func(sim.Model) bool
	}{
		{simnic.Ixgbe, func(m sim.Model) bool { im, ok := m.(*intel.Model); return ok && im.Flavor() == intel.X82599 }},
		{simnic.IGB, func(m sim.Model) bool { im, ok := m.(*intel.Model); return ok && im.Flavor() == intel.X82576 }},
		{simnic.IGBVF, func(m sim.Model) bool { _, ok := m.(*igbvf.Model); return ok }},
		{simnic.Virtio, func(m sim.Model) bool { _, ok := m.(*virtio.Model); return ok }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far, cable := wire.Pair()
			defer far.Close()
			m, err := simnic.New(tt.name, simnic.Config{Addr: pci.MustParseAddr("0000:02:00.1"), Wire: cable, Strict: true, QueueSize: 512})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !tt.check(m) {
				t.Fatalf("model %T is not the %s model", m, tt.name)
			}
			if a := m.PCI().Addr().String(); a != "0000:02:00.1" {
				t.Errorf("address %s, want 0000:02:00.1", a)
			}
			p, err := nic.Open(m.PCI(), tt.name, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone})
			if err != nil {
				t.Fatalf("the %s driver does not open the model's PCI: %v", tt.name, err)
			}
			defer p.Close()
			if err := m.Device().Err(); err != nil {
				t.Errorf("strict model: %v", err)
			}
		})
	}
}

// TestNewUnknown checks that an unknown name is refused with an error naming it and the
// names there are.
func TestNewUnknown(t *testing.T) {
	for _, name := range []string{"", "e1000", "IXGBE", "auto"} {
		if m, err := simnic.New(name, simnic.Config{}); err == nil || m != nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "ixgbe, igb, igbvf, virtio") {
			t.Errorf("New(%q) = %v, %v; want an error naming it and the known names", name, m, err)
		}
		if p, err := simnic.NewPair(name, simnic.Config{}); err == nil || p != nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("NewPair(%q) = %v, %v; want an error naming it", name, p, err)
		}
		if simnic.Known(name) {
			t.Errorf("Known(%q)", name)
		}
	}
}

// TestNewPair forwards a frame through each model's pair: into port 0 from its far end,
// out of port 1 to its far end, by the driver of that name; both ports share the pair's
// IOMMU, with their own addresses and MACs. The frame keeps its sender's source address,
// which an igbvf's PF lets out only with AntiSpoof off.
func TestNewPair(t *testing.T) {
	type test struct {
		name, model string
		cfg         simnic.Config
		spoofed     bool // port 1 refuses to send the frame
	}
	var tests []test
	for _, n := range simnic.Names {
		tests = append(tests, test{name: n, model: n, cfg: simnic.Config{Strict: true}})
	}
	tests = append(tests, test{name: "igbvf anti-spoof", model: simnic.IGBVF, cfg: simnic.Config{Strict: true, AntiSpoof: true}, spoofed: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := simnic.NewPair(tt.model, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pair.Close()
			a, b := pair.Models[0], pair.Models[1]
			if a.Device().IOMMU() != pair.IOMMU || b.Device().IOMMU() != pair.IOMMU {
				t.Error("the ports are not on the pair's IOMMU")
			}
			if a.PCI().Addr() == b.PCI().Addr() || a.MAC().String() == b.MAC().String() {
				t.Errorf("the ports share address %v or MAC %v", a.PCI().Addr(), a.MAC())
			}
			var ports [2]nic.Port
			for i, m := range pair.Models {
				if ports[i], err = nic.Open(m.PCI(), tt.model, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone}); err != nil {
					t.Fatalf("port %d: %v", i, err)
				}
				defer ports[i].Close()
			}
			out := make(chan []byte, 1)
			pair.Far[1].SetHandler(func(f []byte, _ int64) {
				select {
				case out <- append([]byte(nil), f...):
				default:
				}
			})
			frame := make([]byte, 60)
			copy(frame, a.MAC())
			copy(frame[6:], []byte{0x02, 0, 0, 0, 0, 0x42})
			if err := pair.Far[0].Send(frame); err != nil {
				t.Fatal(err)
			}
			bufs := make([]*nic.Buf, 8)
			deadline := time.Now().Add(10 * time.Second)
			for {
				n := ports[0].RxBurst(0, bufs)
				if sent := ports[1].TxBurst(0, bufs[:n]); sent < n {
					t.Fatalf("sent %d of %d", sent, n)
				}
				if tt.spoofed && b.Counters().TxErrors == 1 {
					break
				}
				select {
				case f := <-out:
					if tt.spoofed {
						t.Fatalf("port 1 sent a frame from %x with anti-spoof on", f[6:12])
					}
					if string(f[:60]) != string(frame) {
						t.Errorf("forwarded % x, want % x", f, frame)
					}
					if c := b.Counters(); c.WireOut != 1 || c.Lost() != 0 {
						t.Errorf("port 1 counters %+v, want 1 frame sent, none lost", c)
					}
				default:
					if time.Now().After(deadline) {
						t.Fatalf("no frame forwarded or refused in 10 s (port 0 %+v, port 1 %+v)", a.Counters(), b.Counters())
					}
					time.Sleep(100 * time.Microsecond)
					continue
				}
				break
			}
			if c := a.Counters(); c.RxFrames != 1 || c.Lost() != 0 {
				t.Errorf("port 0 counters %+v, want 1 frame received, none lost", c)
			}
			if c := b.Counters(); tt.spoofed && (c.WireOut != 0 || c.TxErrors != 1) {
				t.Errorf("port 1 counters %+v, want the spoofed frame counted as a TX error, not sent", c)
			}
		})
	}
}
