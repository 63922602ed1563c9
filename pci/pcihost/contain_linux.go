package pcihost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/clip"
)

const (
	oNoFollow  = unix.O_NOFOLLOW
	oNonblock  = unix.O_NONBLOCK
	oNoCTTY    = unix.O_NOCTTY
	oStat      = unix.O_PATH // open only to stat: openat2 refuses other flags with O_PATH
	oDirectory = unix.O_DIRECTORY
)

// linkCount returns the number of hard links of a file.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// isKernelFS reports whether f is on sysfs or procfs, whose files have no length to cut.
func isKernelFS(f *os.File) bool {
	var s unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &s); err != nil {
		return true // do not truncate what we cannot identify
	}
	return s.Type == unix.SYSFS_MAGIC || s.Type == unix.PROC_SUPER_MAGIC
}

// noOpenat2 is set once the kernel says it has no openat2 (before 5.6, or a seccomp
// filter that refuses it); tests set it to exercise the fallback.
var noOpenat2 atomic.Bool

// openBeneath opens rel under root with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS):
// the kernel refuses any resolution that leaves root. ok is false when the kernel has no
// openat2.
func openBeneath(root, rel string, flag int, perm os.FileMode) (f *os.File, err error, ok bool) {
	if noOpenat2.Load() {
		return nil, nil, false
	}
	dfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}, true
	}
	defer unix.Close(dfd)
	name := strings.TrimLeft(filepath.ToSlash(rel), "/")
	if name == "" {
		name = "."
	}
	how := unix.OpenHow{Flags: uint64(flag) | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if flag&(os.O_CREATE|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(perm.Perm())
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dfd, name, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), filepath.Join(root, name)), nil, true
		case (errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN)) && try < 16:
			continue // RESOLVE_BENEATH fails with EAGAIN on a concurrent rename
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && flag&unix.O_NOATIME == 0:
			noOpenat2.Store(true)
			return nil, nil, false
		case errors.Is(err, unix.EXDEV):
			return nil, fmt.Errorf("%s: %w %s", clip.String(rel), ErrOutsideRoot, root), true
		}
		return nil, &os.PathError{Op: "open", Path: filepath.Join(root, name), Err: err}, true
	}
}
