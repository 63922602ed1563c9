//go:build linux

package vhost

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapTable maps every region's descriptor (shared, read-write), after checking that the
// file holds the region (touching a mapping past the end of its file raises SIGBUS) and
// lives on a filesystem whose page faults the kernel serves itself (memoryFS). On error
// nothing stays mapped. The descriptors stay the caller's.
func mapTable(rs []region, fds []int, extraFS []int64) (*memTable, error) {
	t := &memTable{}
	for i, r := range rs {
		st, err := memoryFile(i, fds[i], r, extraFS)
		if err != nil {
			t.unmap()
			return nil, err
		}
		end := r.offset + r.size
		length := end
		if bs := uint64(st.Blksize); bs > 0 && bs&(bs-1) == 0 && length%bs != 0 && (length+bs-1)&^(bs-1) <= uint64(st.Size) {
			length = (length + bs - 1) &^ (bs - 1) // hugetlbfs maps whole hugepages
		}
		m, err := unix.Mmap(fds[i], 0, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.unmap()
			return nil, fmt.Errorf("region %d: mmap 0x%x bytes: %w", i, length, err)
		}
		t.regions = append(t.regions, memRegion{gpa: r.gpa, uva: r.uva, mem: m[r.offset:end:end], mapping: m,
			src: r, dev: uint64(st.Dev), ino: uint64(st.Ino)})
	}
	return t, nil
}

// unmap releases every mapping. Nothing may use the table afterwards.
func (t *memTable) unmap() {
	if t == nil {
		return
	}
	for _, r := range t.regions {
		unix.Munmap(r.mapping)
	}
	t.regions = nil
}
