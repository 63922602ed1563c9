package vhost

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// Filesystems a front end's memory may always live on: their page faults are served by
// the kernel from memory (memfd and /dev/shm are tmpfs).
const (
	tmpfsMagic     = 0x01021994
	hugetlbfsMagic = 0x958458f6
)

// memoryFile checks region i's descriptor: a regular file on an allowed filesystem
// (tmpfs, hugetlbfs, or one of extraFS) that holds the region. A file on FUSE or NFS
// would make every page fault of the poll thread wait on another process or a server.
func memoryFile(i, fd int, r region, extraFS []int64) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, fmt.Errorf("region %d: fstat: %w", i, err)
	}
	end := r.offset + r.size
	if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Size) < end {
		return st, fmt.Errorf("%w: region %d: descriptor is not a file of at least 0x%x bytes (mode 0%o, size 0x%x)",
			errProto, i, end, st.Mode, st.Size)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return st, fmt.Errorf("region %d: fstatfs: %w", i, err)
	}
	if t := uint32(fs.Type); t != tmpfsMagic && t != hugetlbfsMagic && !slices.ContainsFunc(extraFS, func(x int64) bool { return uint32(x) == t }) {
		return st, fmt.Errorf("%w: region %d: the memory file is on a filesystem of type 0x%x, not tmpfs or hugetlbfs "+
			"(a disk filesystem can be allowed by the port's memory_filesystems)", errProto, i, t)
	}
	return st, nil
}

// same reports whether rs with fds describes t exactly: the same regions of the same
// files (device and inode), so that t can stay mapped.
func (t *memTable) same(rs []region, fds []int) bool {
	if t == nil || len(t.regions) != len(rs) || len(fds) != len(rs) {
		return false
	}
	for i, r := range rs {
		var st unix.Stat_t
		if unix.Fstat(fds[i], &st) != nil {
			return false
		}
		if g := &t.regions[i]; g.src != r || g.dev != uint64(st.Dev) || g.ino != uint64(st.Ino) {
			return false
		}
	}
	return true
}
