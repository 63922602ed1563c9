package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// bindUnixgram binds a new unix datagram socket at path. The socket file is created with
// mode 0600 whatever the umask: the mode is set on the socket before bind, which creates
// the file with it (Linux takes the file's mode from the socket's). bind creates the file
// itself, so it never follows a symlink at path and fails on any existing file.
func bindUnixgram(path string) (*net.UnixConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fchmod socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	c, err := net.FilePacketConn(f)
	f.Close()
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// shareWithGroup gives the socket file at path, which bindUnixgram created mode 0600, to
// group gid and then mode 0660. It works on the file through a descriptor opened without
// following a symlink, and refuses anything but a socket.
func shareWithGroup(path string, gid int) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open socket file: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat socket file: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s is no longer a socket", path)
	}
	if err := unix.Fchownat(fd, "", -1, gid, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("chown socket file to group %d: %w", gid, err)
	}
	// An O_PATH descriptor cannot be fchmod'ed; its /proc link names the same file.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o660); err != nil {
		return fmt.Errorf("chmod socket file: %w", err)
	}
	return nil
}

// connectUnix connects the datagram socket fd to the socket bound at path without
// following a symlink there: it opens path with O_PATH|O_NOFOLLOW, checks that it is a
// socket, and connects through the descriptor's /proc link, which names that very file.
func connectUnix(fd int, path string) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
	case unix.S_IFLNK:
		return fmt.Errorf("%s is a symlink: %w", path, errNotSocket)
	default:
		return fmt.Errorf("%s: %w", path, errNotSocket)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(pfd)}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// errNotSocket is what connectUnix reports for a path that holds no socket.
var errNotSocket = errors.New("not a socket")
