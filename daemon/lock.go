package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pidFileName is the daemon's lock and pid file inside state_dir.
const pidFileName = "uiod.pid"

// pidLock is the running daemon's claim on its state directory: an exclusively locked
// file holding its pid. Two daemons driving the same NICs would program the same rings —
// with uio_pci_generic nothing else stops that — so a second `uiod run` with the same
// state_dir refuses to start.
type pidLock struct {
	f    *os.File
	path string
}

// lockStateDir creates <root>/<stateDir>, takes the lock and writes the pid.
func lockStateDir(root, stateDir string) (*pidLock, error) {
	dir := filepath.Join(root, stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state_dir: %w", err)
	}
	path := filepath.Join(dir, pidFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state_dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state_dir: another uiod run (pid %s) holds %s", strings.TrimSpace(string(b)), path)
		}
		return nil, fmt.Errorf("state_dir: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state_dir: write %s: %w", path, err)
	}
	return &pidLock{f: f, path: path}, nil
}

// release removes the pid file and drops the lock.
func (l *pidLock) release() error {
	err := os.Remove(l.path)
	return errors.Join(err, l.f.Close())
}
