package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/wire"
)

// maxUnixPath is the longest path a sockaddr_un holds.
const maxUnixPath = 107

// pinWire returns w with its unix socket paths pinned inside root: each socket's
// directory is opened inside root (symlinks followed only inside it; see pcihost.Host.OpenFile)
// and the path becomes /proc/self/fd/N/NAME, which names that very directory however the
// path is changed afterwards. The wire then binds its own socket and, at every (re)connect,
// finds its peer's without resolving the configured path again, so nobody who can rename
// a directory on the way can steer either outside root. The returned files are the pinned
// directories, to close after the wire. Under root "/", or for any other kind of wire, w
// is returned as it is.
func pinWire(root string, w config.Wire) (config.Wire, []*os.File, error) {
	if w.Kind != wire.KindUnix || filepath.Clean(root) == "/" {
		return w, nil, nil
	}
	h, err := pcihost.New(root)
	if err != nil {
		return w, nil, err
	}
	var dirs []*os.File
	pin := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(h.Root(), abs)
		if err != nil {
			return "", err
		}
		d, err := h.OpenFile(filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socket %s: directory: %w", p, err)
		}
		dirs = append(dirs, d)
		pinned := "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + filepath.Base(rel)
		if len(pinned) > maxUnixPath {
			return "", fmt.Errorf("socket %s: %s is longer than %d bytes", p, pinned, maxUnixPath)
		}
		return pinned, nil
	}
	local, err := pin(w.Local)
	if err == nil {
		w.Remote, err = pin(w.Remote)
	}
	if err != nil {
		closeAll(dirs)
		return w, nil, err
	}
	w.Local = local
	return w, dirs, nil
}

// closeAll closes files, ignoring errors (pinned directories hold no data).
func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
