//go:build linux

package dmamem

import (
	"fmt"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxAssemblePages bounds how many single hugepages assembleHugePages takes from the pool
// while it looks for a physically consecutive run.
const maxAssemblePages = 1024

// mapMemory maps size bytes of anonymous memory, populated and locked so that the pages
// stay where the device was told they are. huge selects 2 MiB hugepages. reverse faults
// the pages in from the last to the first: the kernel hands out free pages last-freed
// first, often in descending physical order, so faulting them in backwards can yield
// physically ascending memory where the forward order did not.
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
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	b := unsafe.Slice((*byte)(p), size)
	if reverse {
		for off := size - page; off >= 0; off -= page {
			b[off] = 0 // fault the page in
		}
	}
	// MAP_LOCKED is best effort; mlock reports a failure.
	if err := unix.Mlock(b); err != nil {
		unmapMemory(b)
		return nil, fmt.Errorf("mlock %d bytes: %w (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)", size, err)
	}
	// A forked child must not share (and copy-on-write move) pages a device writes to.
	if err := unix.Madvise(b, unix.MADV_DONTFORK); err != nil {
		unmapMemory(b)
		return nil, fmt.Errorf("madvise dontfork: %w", err)
	}
	return b, nil
}

// unmapMemory unmaps memory mapMemory or assembleHugePages returned.
func unmapMemory(b []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// assembleHugePages returns n*2 MiB of memory made of n physically consecutive hugepages
// at consecutive virtual addresses (the way DPDK builds contiguous memory): it maps single
// hugepages from the pool, sorts them by physical address (physOf), picks a consecutive
// run and moves it with mremap into one reserved virtual range. The pages it did not use
// go back to the pool.
func assembleHugePages(n int, physOf func([]byte) (uint64, error)) ([]byte, error) {
	type page struct {
		b  []byte
		pa uint64
	}
	var pages []page
	defer func() {
		for _, p := range pages {
			if p.b != nil {
				unmapMemory(p.b)
			}
		}
	}()
	for len(pages) < maxAssemblePages {
		b, err := mapMemory(HugePageSize, true, false)
		if err != nil {
			break // pool exhausted
		}
		pa, err := physOf(b)
		if err != nil {
			unmapMemory(b)
			return nil, err
		}
		pages = append(pages, page{b, pa})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].pa < pages[j].pa })
	first := -1
	for i := 0; i+n <= len(pages) && first < 0; i++ {
		if pages[i+n-1].pa-pages[i].pa == uint64(n-1)*HugePageSize {
			first = i // sorted and distinct, so the run is consecutive
		}
	}
	if first < 0 {
		return nil, fmt.Errorf("%d free hugepages hold no %d physically consecutive ones: %w", len(pages), n, ErrNotContiguous)
	}
	size := uintptr(n) * HugePageSize
	span := size + HugePageSize
	res, err := unix.MmapPtr(-1, 0, nil, span, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of address space: %w", span, err)
	}
	head := (HugePageSize - uintptr(res)%HugePageSize) % HugePageSize
	base := unsafe.Add(res, head)
	if head > 0 {
		unix.MunmapPtr(res, head)
	}
	if tail := span - head - size; tail > 0 {
		unix.MunmapPtr(unsafe.Add(base, size), tail)
	}
	for j := 0; j < n; j++ {
		p := &pages[first+j]
		to := unsafe.Add(base, uintptr(j)*HugePageSize)
		if _, err := unix.MremapPtr(unsafe.Pointer(unsafe.SliceData(p.b)), HugePageSize, to, HugePageSize, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED); err != nil {
			unix.MunmapPtr(base, size) // the pages moved so far and the rest of the reservation
			return nil, fmt.Errorf("mremap hugepage: %w (kernel too old to move hugetlb mappings?): %w", err, ErrNotContiguous)
		}
		p.b = nil
	}
	return unsafe.Slice((*byte)(base), size), nil
}
