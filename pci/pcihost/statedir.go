package pcihost

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/clip"
)

// StateDir is a directory of uiod's own state files (bind records, the daemon's pid file)
// opened so that nobody else can steer what uiod, running as root, writes there: it lies
// inside the host root, is not itself a symlink, is owned by root (or by the user running
// uiod) and is not writable by group or others. Files in it are opened relative to the
// open directory, never through a symlink, and only ever replaced by rename or created
// new — an existing file is never truncated.
type StateDir struct {
	f    *os.File
	path string
}

// OpenStateDir opens the directory rel under Root (a leading "/" means the root, so a
// configured state_dir of "/run/uiod" is <root>/run/uiod), creating missing elements with
// mode 0755 when create is set. It refuses a directory outside Root, a symlink, one owned
// by anyone but root or the current user, one writable by group or others, and one that
// holds anything but uiod's own files: bind records, their temporary files and
// h.StateFiles.
func (h *Host) OpenStateDir(rel string, create bool) (*StateDir, error) {
	p, err := h.Path(rel)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if create {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("create state directory: %w", err)
		}
	}
	f, err := h.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("state directory %s is not a directory (a symlink?): %w", p, err)
		}
		return nil, fmt.Errorf("state directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory %s: %w", p, err)
	}
	if err := checkStateDirMode(p, st.Uid, uint32(st.Mode)); err != nil {
		f.Close()
		return nil, err
	}
	if err := h.checkStateDirEntries(f, p); err != nil {
		f.Close()
		return nil, err
	}
	return &StateDir{f: f, path: p}, nil
}

// checkStateDirMode refuses a state directory that someone other than root or the current
// user could change.
func checkStateDirMode(p string, uid, mode uint32) error {
	if euid := uint32(os.Geteuid()); uid != 0 && uid != euid {
		return fmt.Errorf("state directory %s is owned by uid %d, not root: refusing to keep state there", p, uid)
	}
	if mode&0o022 != 0 {
		return fmt.Errorf("state directory %s is writable by group or others (mode %#o): refusing to keep state there (chmod go-w it)", p, mode&0o7777)
	}
	return nil
}

// Path returns the directory's path.
func (d *StateDir) Path() string { return d.path }

// Close closes the directory.
func (d *StateDir) Close() error { return d.f.Close() }

// checkName refuses anything but a plain file name.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("state file name %s is not a plain file name", clip.Quote(name))
	}
	return nil
}

func (d *StateDir) fd() int { return int(d.f.Fd()) }

// openat opens name in the directory, never following a symlink and never blocking, and
// returns it if it is a regular file.
func (d *StateDir) openat(name string, flag int, perm uint32) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	full := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd(), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink: refusing to follow it", full)
		}
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	f := os.NewFile(uintptr(fd), full)
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file (%s)", full, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens the existing regular file name with flag (O_RDONLY or O_RDWR; never
// O_TRUNC or O_CREATE), refusing a symlink.
func (d *StateDir) Open(name string, flag int) (*os.File, error) {
	if flag&(os.O_TRUNC|os.O_CREATE) != 0 {
		return nil, fmt.Errorf("state file %s: open refuses O_TRUNC and O_CREATE", name)
	}
	return d.openat(name, flag, 0)
}

// Create creates name, which must not exist yet (os.ErrExist otherwise), for reading and
// writing.
func (d *StateDir) Create(name string, perm os.FileMode) (*os.File, error) {
	return d.openat(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, uint32(perm.Perm()))
}

// ReadFile reads the regular file name, at most max bytes; a symlink, FIFO or device
// node in its place is refused.
func (d *StateDir) ReadFile(name string, max int) ([]byte, error) {
	f, err := d.Open(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, max)
}

// WriteFile replaces name with data atomically: a new temporary file written in full,
// then renamed over name (replacing a symlink there, never writing through it).
func (d *StateDir) WriteFile(name string, data []byte, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := d.Create(tmp, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		unix.Unlinkat(d.fd(), tmp, 0)
		return fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// Remove removes name (the link itself if it is a symlink). A missing file is
// os.ErrNotExist.
func (d *StateDir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// SameFile reports whether name is still the file f (not replaced or removed since f
// was opened).
func (d *StateDir) SameFile(name string, f *os.File) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstatat(d.fd(), name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
