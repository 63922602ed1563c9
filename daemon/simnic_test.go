package daemon

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/nic/igbvf"
	"github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/nic/virtio"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
	simigbvf "github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/sim/intel"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestSimPortModels starts a daemon on two sim ports for each nic value: the port gets
// the device model that value names, is opened by the matching driver, and forwards every
// frame both ways, the adaptive poll thread waking by interrupt between bursts.
func TestSimPortModels(t *testing.T) {
	tests := []struct {
		nic   string
		check func(t *testing.T, p *port)
	}{
		{"virtio", func(t *testing.T, p *port) {
			m, ok := p.model.(*simvirtio.Model)
			if !ok {
				t.Fatalf("port %s: model %T, want a virtio-net model", p.cfg.Name, p.model)
			}
			if _, ok := p.driverNIC().(*virtio.Port); !ok {
				t.Fatalf("port %s: opened by %T", p.cfg.Name, p.driverNIC())
			}
			if f := m.Features(); f&(1<<32) == 0 { // VIRTIO_F_VERSION_1
				t.Errorf("port %s: driver features %#x lack VERSION_1", p.cfg.Name, f)
			}
		}},
		{"igb", intelModel[*igb.Port](intel.X82576)},
		{"igbvf", func(t *testing.T, p *port) {
			if _, ok := p.model.(*simigbvf.Model); !ok {
				t.Fatalf("port %s: model %T, want an 82576 VF model", p.cfg.Name, p.model)
			}
			if _, ok := p.driverNIC().(*igbvf.Port); !ok {
				t.Fatalf("port %s: opened by %T", p.cfg.Name, p.driverNIC())
			}
		}},
		{"auto", intelModel[*ixgbe.Port](intel.X82599)},
		{"ixgbe", intelModel[*ixgbe.Port](intel.X82599)},
	}
	for _, tt := range tests {
		t.Run(tt.nic, func(t *testing.T) {
			name := "dnic" + tt.nic
			cfg := simNICConfig(t, name, tt.nic, "")
			d, base := startDaemon(t, cfg)
			for _, p := range d.ports {
				tt.check(t, p)
			}
			// At most 64 frames in flight: the virtio model's queues hold 128, and a pause
			// now and then lets the thread fall asleep.
			const n = 1000
			e := openFarEnds(t, name)
			e.sendBoth(t, n, 32, 63)
			st := getStatus(t, base+"/status")
			if e.sink[1].count() != n || e.sink[0].count() != n {
				t.Fatalf("forwarded a→b %d, b→a %d of %d; status %+v", e.sink[1].count(), e.sink[0].count(), n, st)
			}
			var rx uint64
			for _, p := range st.Ports {
				if !p.LinkUp {
					t.Errorf("port %s: link down", p.Name)
				}
				rx += p.Stats.RxPackets
			}
			if rx != 2*n {
				t.Errorf("ports received %d frames, want %d", rx, 2*n)
			}
			if st.Threads[0].WakeInterrupt == 0 {
				t.Errorf("adaptive thread never woke by interrupt: %+v", st.Threads[0])
			}
		})
	}
}

// TestCheckNICVirtio checks the refusals made from sysfs before a backend opens a
// function: a virtio-net function picked by nic auto refuses an itr, naming the port;
// without one, or by name, it is accepted; nic virtio on an Intel function is refused
// with the ids virtio supports.
func TestCheckNICVirtio(t *testing.T) {
	tr := pcitest.Standard(t)
	b := &backends{root: tr.Root}
	v, err := pci.ParseAddr(pcitest.Virtio)
	if err != nil {
		t.Fatal(err)
	}
	x, err := pci.ParseAddr(pcitest.X540)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.checkNIC(config.Port{Name: "v0", NIC: config.NICAuto, ITR: 50 * time.Microsecond}, v)
	testutil.ErrorIs(t, err, pci.ErrNotSupported, "port v0: 0000:05:00.0 is virtio-net, which has no interrupt moderation: itr 50µs")
	for _, name := range []string{config.NICAuto, config.NICVirtio} {
		id, err := b.checkNIC(config.Port{Name: "v0", NIC: name}, v)
		if err != nil || id.Vendor != 0x1af4 {
			t.Errorf("nic %s: %v, %v; want the virtio-net ids from sysfs", name, id, err)
		}
	}
	_, err = b.checkNIC(config.Port{Name: "x0", NIC: config.NICVirtio}, x)
	testutil.ErrorContains(t, err, "port x0", "unsupported device 8086:1528 for driver virtio", "1af4:1041 (virtio-net)")
}

// intelModel is TestSimPortModels' check of a port on Intel model flavour f, opened by
// the driver whose port type is D.
func intelModel[D nic.Port](f intel.Flavor) func(t *testing.T, p *port) {
	return func(t *testing.T, p *port) {
		m, ok := p.model.(*intel.Model)
		if !ok || m.Flavor() != f {
			t.Fatalf("port %s: model %T, want the %v", p.cfg.Name, p.model, f)
		}
		if _, ok := p.driverNIC().(D); !ok {
			t.Fatalf("port %s: opened by %T", p.cfg.Name, p.driverNIC())
		}
	}
}

// TestModelNeedCoversHeap: what validation charges a sim port (config.Port.ModelNeed)
// covers the heap the port takes when it opens, for every device model, and is not far
// above it. The heap is measured after a GC, around opening one port.
func TestModelNeedCoversHeap(t *testing.T) {
	for _, nic := range []string{"ixgbe", "igb", "virtio"} {
		for _, q := range []struct{ queues, ring int }{{1, 512}, {4, 1024}, {4, 64}, {2, 4096}} {
			t.Run(fmt.Sprintf("%s/%dx%d", nic, q.queues, q.ring), func(t *testing.T) {
				cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, nic: %s, wire: "pair:dmodelmem", rx_queues: %d, tx_queues: %[2]d, rx_ring: %d, tx_ring: %[3]d}
forward: {mode: reflect}
poll: {mode: busy}
`, nic, q.queues, q.ring))
				b := backends{root: "/", log: zap.NewNop()}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				p, err := b.openPort(cfg.Ports[0])
				if err != nil {
					t.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				defer func() { p.close(); b.close() }()
				heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
				need := int64(cfg.Ports[0].ModelNeed())
				t.Logf("heap +%d KiB, ModelNeed %d KiB (%.2f×)", heap>>10, need>>10, float64(need)/float64(heap))
				if need < heap {
					t.Errorf("ModelNeed %d KiB is below the %d KiB the port took", need>>10, heap>>10)
				}
				if need > 2*heap {
					t.Errorf("ModelNeed %d KiB is more than twice the %d KiB the port took", need>>10, heap>>10)
				}
			})
		}
	}
}
