//go:build !linux

package pcihost

import (
	"os"
	"syscall"
)

const (
	oNoFollow  = syscall.O_NOFOLLOW
	oNonblock  = syscall.O_NONBLOCK
	oNoCTTY    = syscall.O_NOCTTY
	oStat      = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	oDirectory = syscall.O_DIRECTORY
)

// linkCount returns the number of hard links of a file.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// isKernelFS reports false: only Linux has sysfs.
func isKernelFS(f *os.File) bool { return false }

// openBeneath reports that there is no openat2: openIn resolves the path itself.
func openBeneath(root, rel string, flag int, perm os.FileMode) (*os.File, error, bool) {
	return nil, nil, false
}
