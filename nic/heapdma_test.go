package nic

import (
	"testing"

	"github.com/uiod/uiod/pci"
)

// TestHeapDMA checks the heap allocator: zeroed memory of the size asked, made-up bus
// addresses that never overlap, bad sizes and a free of nothing refused.
func TestHeapDMA(t *testing.T) {
	var d HeapDMA
	if err := d.Free(pci.Mem{}); err == nil {
		t.Error("Free with nothing allocated succeeded")
	}
	for _, size := range []int{0, -1} {
		if _, err := d.Alloc(size); err == nil {
			t.Errorf("Alloc(%d) succeeded", size)
		}
	}
	var prevEnd uint64
	for _, size := range []int{1, 4096, 5000, 64} {
		m, err := d.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Bytes) != size || m.IOVA == 0 || m.IOVA < prevEnd {
			t.Fatalf("Alloc(%d) = %d bytes at 0x%x (previous end 0x%x)", size, len(m.Bytes), m.IOVA, prevEnd)
		}
		for _, b := range m.Bytes {
			if b != 0 {
				t.Fatal("memory not zeroed")
			}
		}
		prevEnd = m.IOVA + uint64(size)
		if err := d.Free(m); err != nil {
			t.Fatal(err)
		}
	}
}
