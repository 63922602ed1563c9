package ring

import (
	"fmt"
	"unsafe"

	"github.com/uiod/uiod/pci"
)

// descRing views n descriptors at the start of m. m must be 16-byte aligned (DMA memory is
// at least 4 KiB aligned) and hold n descriptors.
func descRing(m pci.Mem, n int) ([]advDesc, error) {
	if n <= 0 || len(m.Bytes) < n*DescSize {
		return nil, fmt.Errorf("descriptor ring: %d bytes of memory for %d descriptors", len(m.Bytes), n)
	}
	p := unsafe.Pointer(&m.Bytes[0])
	if uintptr(p)%DescSize != 0 {
		return nil, fmt.Errorf("descriptor ring: memory at %p is not %d-byte aligned", p, DescSize)
	}
	return unsafe.Slice((*advDesc)(p), n), nil
}
