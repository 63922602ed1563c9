//go:build linux

package vhost

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapTable maps every region's descriptor (shared, read-write), after checking that the
// file holds the region: touching a mapping past the end of its file raises SIGBUS. On
// error nothing stays mapped. The descriptors stay the caller's.
func mapTable(rs []region, fds []int) (*memTable, error) {
	t := &memTable{}
	for i, r := range rs {
		var st unix.Stat_t
		if err := unix.Fstat(fds[i], &st); err != nil {
			t.unmap()
			return nil, fmt.Errorf("region %d: fstat: %w", i, err)
		}
		end := r.offset + r.size
		if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Size) < end {
			t.unmap()
			return nil, fmt.Errorf("%w: region %d: descriptor is not a file of at least 0x%x bytes (mode 0%o, size 0x%x)",
				errProto, i, end, st.Mode, st.Size)
		}
		length := end
		if bs := uint64(st.Blksize); bs > 0 && bs&(bs-1) == 0 && length%bs != 0 && (length+bs-1)&^(bs-1) <= uint64(st.Size) {
			length = (length + bs - 1) &^ (bs - 1) // hugetlbfs maps whole hugepages
		}
		m, err := unix.Mmap(fds[i], 0, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.unmap()
			return nil, fmt.Errorf("region %d: mmap 0x%x bytes: %w", i, length, err)
		}
		t.regions = append(t.regions, memRegion{gpa: r.gpa, uva: r.uva, mem: m[r.offset:end:end], mapping: m})
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
