package lpm

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages under root (2 MiB aligned, a multiple of
// 2 MiB long, all zero) and drops the pages the allocator may already have touched in
// zeroing it, so that the first write to each 2 MiB faults in a huge page rather than
// leaving 4 KiB pages for khugepaged to collapse some day. Dropped anonymous pages read
// back as zeros, which is what the allocator handed out.
func adviseHuge(root []uint32) error {
	b := asBytes(root)
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		return err
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}
