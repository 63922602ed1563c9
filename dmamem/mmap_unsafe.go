package dmamem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapMemory maps size bytes of anonymous memory, populated and locked so that the pages
// stay where the device was told they are. huge selects 2 MiB hugepages. reverse faults
// the pages in from the last to the first: the kernel hands out free pages (hugepages
// above all) last-freed first, often in descending physical order, so faulting them in
// backwards often yields physically ascending, contiguous memory.
func mapMemory(size int, huge, reverse bool) ([]byte, error) {
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if !reverse {
		flags |= unix.MAP_POPULATE | unix.MAP_LOCKED
	}
	page := PageSize
	if huge {
		flags |= unix.MAP_HUGETLB | unix.MAP_HUGE_2MB
		page = HugePageSize
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	if reverse {
		for off := size - page; off >= 0; off -= page {
			b[off] = 0 // fault the page in
		}
	}
	// MAP_LOCKED is best effort; mlock reports a failure.
	if err := unix.Mlock(b); err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("mlock %d bytes: %w (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)", size, err)
	}
	// A forked child must not share (and copy-on-write move) pages a device writes to.
	if err := unix.Madvise(b, unix.MADV_DONTFORK); err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("madvise dontfork: %w", err)
	}
	return b, nil
}

func unmapMemory(b []byte) error { return unix.Munmap(b) }

// VirtAddr returns the process's virtual address of b[0] (0 for an empty slice). Backends
// hand it to the kernel (VFIO_IOMMU_MAP_DMA, IOMMU_IOAS_MAP) and to pagemap lookups.
func VirtAddr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
