//go:build linux

package capture

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxPeerGroups bounds the supplementary groups read (the kernel's NGROUPS_MAX is 65536).
const maxPeerGroups = 1 << 16

// peerGroups returns the supplementary groups of the process that connected the unix
// socket fd, as the kernel recorded them at connect (SO_PEERGROUPS, Linux 4.13). x/sys/unix
// has no getter for it: the option is an array of gid_t, so this is getsockopt itself,
// with a buffer grown to the length the kernel asks for (ERANGE).
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case errno == 0:
			return buf[:n/4], nil
		case errno == unix.ERANGE && int(n/4) > len(buf) && n/4 <= maxPeerGroups:
			buf = make([]uint32, n/4)
		default:
			return nil, errno
		}
	}
}
