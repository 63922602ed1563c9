package nic

import (
	"fmt"

	"github.com/uiod/uiod/pci"
)

// ringMem allocates and views a descriptor ring of n descriptors.
func ringMem(dma pci.DMA, n int) (pci.Mem, []advDesc, error) {
	if n < 8 || n&(n-1) != 0 || n > 1<<16 {
		return pci.Mem{}, nil, fmt.Errorf("ring size %d: not a power of two in [8, 65536]", n)
	}
	if dma == nil {
		return pci.Mem{}, nil, fmt.Errorf("ring: no DMA allocator")
	}
	mem, err := dma.Alloc(n * DescSize)
	if err != nil {
		return pci.Mem{}, nil, fmt.Errorf("allocate ring of %d descriptors: %w", n, err)
	}
	d, err := descRing(mem, n)
	if err != nil {
		dma.Free(mem)
		return pci.Mem{}, nil, err
	}
	return mem, d, nil
}

// sameDMA reports whether two allocators are the same address space. Allocators of
// uncomparable dynamic types are treated as different.
func sameDMA(a, b pci.DMA) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
