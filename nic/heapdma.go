package nic

import (
	"fmt"
	"sync"

	"github.com/uiod/uiod/pci"
)

// HeapDMA is a pci.DMA over ordinary Go memory, for the mempool of a port no device reads
// (a TAP interface, a vhost-user back end). No device can address it: its bus addresses
// are made up, unique within the allocator, so a NIC's TxBurst sees a foreign address space
// and copies the frame into its own DMA memory. The zero HeapDMA is ready to use.
type HeapDMA struct {
	mu   sync.Mutex
	next uint64
	live int
}

// heapIOVABase is the first made-up bus address: never zero, far from anything small.
const heapIOVABase = 0x7a70_0000_0000

var _ pci.DMA = (*HeapDMA)(nil)

// Alloc returns size zeroed bytes of heap memory.
func (d *HeapDMA) Alloc(size int) (pci.Mem, error) {
	if size <= 0 {
		return pci.Mem{}, fmt.Errorf("heap alloc: invalid size %d", size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == 0 {
		d.next = heapIOVABase
	}
	m := pci.Mem{Bytes: make([]byte, size), IOVA: d.next}
	d.next += (uint64(size) + 4095) &^ 4095
	d.live++
	return m, nil
}

// Free forgets m (the garbage collector takes the memory).
func (d *HeapDMA) Free(m pci.Mem) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live == 0 {
		return fmt.Errorf("heap free 0x%x: nothing allocated", m.IOVA)
	}
	d.live--
	return nil
}
