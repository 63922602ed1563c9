package dmamem

import "unsafe"

// VirtAddr returns the process's virtual address of b[0] (0 for an empty slice). Backends
// hand it to the kernel (VFIO_IOMMU_MAP_DMA, IOMMU_IOAS_MAP) and to pagemap lookups.
func VirtAddr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
