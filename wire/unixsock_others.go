//go:build !linux

package wire

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// bindUnixgram binds a new unix datagram socket at path and sets its file's mode to
// 0600. Outside Linux the mode cannot be set before bind, so for a moment the file has
// the mode the umask leaves; bind still fails on any existing file.
func bindUnixgram(path string) (*net.UnixConn, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		c.Close()
		os.Remove(path)
		return nil, fmt.Errorf("chmod socket file: %w", err)
	}
	return c, nil
}

// shareWithGroup gives the socket file at path to group gid, mode 0660.
func shareWithGroup(path string, gid int) error {
	if err := os.Lchown(path, -1, gid); err != nil {
		return fmt.Errorf("chown socket file to group %d: %w", gid, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		return fmt.Errorf("chmod socket file: %w", err)
	}
	return nil
}

// connectUnix connects the datagram socket fd to the socket bound at path, after
// checking that path holds a socket and not a symlink. Outside Linux the check and the
// connect are two steps.
func connectUnix(fd int, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s: %w", path, errNotSocket)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// errNotSocket is what connectUnix reports for a path that holds no socket.
var errNotSocket = errors.New("not a socket")
