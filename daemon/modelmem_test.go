package daemon

import (
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/zap"
)

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
