package vhost

import (
	"fmt"
	"sync"

	"github.com/uiod/uiod/pci"
)

// heapDMA is a pci.DMA over Go memory for the port's receive pool: no device addresses it,
// so a NIC port that sends one of its buffers copies it into its own DMA memory. Its bus
// addresses are made up, unique within the allocator.
type heapDMA struct {
	mu   sync.Mutex
	next uint64
}

var _ pci.DMA = (*heapDMA)(nil)

// Alloc returns size zeroed bytes.
func (d *heapDMA) Alloc(size int) (pci.Mem, error) {
	if size <= 0 {
		return pci.Mem{}, fmt.Errorf("heap alloc: invalid size %d", size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == 0 {
		d.next = 0x7668_0000_0000
	}
	m := pci.Mem{Bytes: make([]byte, size), IOVA: d.next}
	d.next += (uint64(size) + 4095) &^ 4095
	return m, nil
}

// Free leaves the memory to the garbage collector.
func (d *heapDMA) Free(pci.Mem) error { return nil }
