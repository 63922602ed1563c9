package capture

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxSockPath is the longest path a unix socket address holds.
const maxSockPath = 107

// shortPath returns a path for the socket at path that fits a unix socket address, with
// room for extra more bytes of name: path itself, or, when it is longer, the same name
// reached through an open descriptor of its directory (/proc/self/fd/N/NAME). done
// closes that descriptor.
func shortPath(path string, extra int) (short string, done func(), err error) {
	if len(path)+extra <= maxSockPath {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open %s: %w", filepath.Dir(path), err)
	}
	short = fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path))
	if len(short)+extra > maxSockPath {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %q is too long for a unix socket address", filepath.Base(path))
	}
	return short, func() { unix.Close(fd) }, nil
}
