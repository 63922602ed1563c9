package virtio

import (
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// wrappedDMA is the device's allocator behind a value type that is not comparable.
type wrappedDMA struct {
	pci.DMA
	_ []int
}

// TestTxUncomparableDMA sends a buffer whose pool's allocator and the queue's are of one
// uncomparable type: they count as different address spaces (the frame is copied), where
// a bare compare of the two would panic.
func TestTxUncomparableDMA(t *testing.T) {
	_, p := openTest(t, simvirtio.Config{}, nic.Config{RxRing: 64, TxRing: 64}, Options{})
	q := p.tx[0]
	q.dma = wrappedDMA{DMA: q.dma}
	pool, err := nic.NewMempool(wrappedDMA{DMA: p.dev.DMA()}, 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := pool.Get()
	b.SetLen(64)
	if n := p.TxBurst(0, []*nic.Buf{b}); n != 1 {
		t.Fatalf("TxBurst took %d of 1", n)
	}
	if q.nCopies.Load() != 1 {
		t.Errorf("%d frames copied, want 1", q.nCopies.Load())
	}
}
