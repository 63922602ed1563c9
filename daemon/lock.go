package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// pidFileName is the daemon's lock and pid file inside state_dir.
const pidFileName = config.PIDFileName

// pidLock is the running daemon's claim on its state directory: an exclusively locked
// file holding its pid. Two daemons driving the same NICs would program the same rings —
// with uio_pci_generic nothing else stops that — so a second `uiod run` with the same
// state_dir refuses to start.
type pidLock struct {
	dir *pcihost.StateDir
	f   *os.File
	// stale is set when a pid file was there but nobody held its lock: a daemon died
	// without shutting down, and may have left its ports DMAing.
	stale bool
	// stalePID is the dead daemon's pid from that file, 0 if it was unreadable.
	stalePID int
}

// lockStateDir opens <root>/<stateDir> — which must stay inside root, not be a symlink,
// be owned by root and not be writable by group or others (see pcihost.Host.OpenStateDir) —
// takes the lock and writes the pid. The pid file is only ever created new (never
// followed through a symlink, never an existing file truncated): a stale one, whose lock
// nobody holds, is removed first, and the lock reports it.
func lockStateDir(root, stateDir string) (*pidLock, error) {
	h, err := config.StateHost(root)
	if err != nil {
		return nil, fmt.Errorf("state_dir: %w", err)
	}
	dir, err := h.OpenStateDir(stateDir, true)
	if err != nil {
		return nil, stateDirError(err)
	}
	l, err := lockPIDFile(dir)
	if err != nil {
		dir.Close()
		return nil, stateDirError(err)
	}
	return l, nil
}

// stateDirError is the error of a state_dir the daemon cannot use; to a user other than
// root who may not write there, it says what to set.
func stateDirError(err error) error {
	if errors.Is(err, os.ErrPermission) && os.Geteuid() != 0 {
		return fmt.Errorf("state_dir: %w: not root (uid %d): set state_dir, or $%sSTATE_DIR, to a directory you own (with $XDG_RUNTIME_DIR set, a configuration without PCI ports uses $XDG_RUNTIME_DIR/uiod)",
			err, os.Geteuid(), config.EnvPrefix)
	}
	return fmt.Errorf("state_dir: %w", err)
}

// lockPIDFile creates and locks the pid file in dir, replacing a stale one.
func lockPIDFile(dir *pcihost.StateDir) (*pidLock, error) {
	l := &pidLock{dir: dir}
	path := dir.Path() + "/" + pidFileName
	for try := 0; try < 4; try++ {
		f, err := dir.Create(pidFileName, 0o644)
		if err == nil {
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				// Someone opened our new file and locked it first: they are the daemon.
				f.Close()
				continue
			}
			if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
				f.Close()
				dir.Remove(pidFileName)
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			l.f = f
			return l, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		old, err := dir.Open(pidFileName, os.O_RDONLY)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		pid := readPID(old)
		if err := unix.Flock(int(old.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			old.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("another uiod run (pid %s) holds %s", pidString(pid), path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// Nobody holds it: its daemon is gone. Remove it if it is still the file we
		// locked (another starting daemon may have replaced it), then create ours.
		if dir.SameFile(pidFileName, old) {
			if err := dir.Remove(pidFileName); err != nil && !errors.Is(err, os.ErrNotExist) {
				old.Close()
				return nil, err
			}
			l.stale, l.stalePID = true, pid
		}
		old.Close()
	}
	return nil, fmt.Errorf("%s keeps changing: another uiod run is starting", path)
}

// readPID reads the pid a pid file holds, 0 if it holds no valid pid.
func readPID(f *os.File) int {
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	pid, err := strconv.Atoi(strings.TrimSuffix(string(b[:n]), "\n"))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func pidString(pid int) string {
	if pid == 0 {
		return "unknown"
	}
	return strconv.Itoa(pid)
}

// release removes the pid file and drops the lock.
func (l *pidLock) release() error {
	var err error
	if l.dir.SameFile(pidFileName, l.f) {
		err = l.dir.Remove(pidFileName)
	}
	return errors.Join(err, l.f.Close(), l.dir.Close())
}

// quiesceStale quiesces the PCI function of every port (bus mastering off, function
// reset; see pcihost.Host.Quiesce) when the lock found a stale pid file: the daemon that
// left it died without its ordered shutdown. uio_pci_generic turns bus mastering off when
// the dead process's last /dev/uioN descriptor closes, but does not reset the NIC: its
// rings stay programmed at memory the kernel has handed on, so whatever sets bus
// mastering again (igb_uio never cleared it; a surviving child may still hold the
// descriptor) resumes DMA there. Sim ports have no function to stop. It does nothing
// after a clean shutdown.
func quiesceStale(l *pidLock, root string, ports []config.Port, log *zap.Logger) error {
	if !l.stale {
		return nil
	}
	log.Warn("stale pid file: the previous uiod run died without shutting down; quiescing its ports",
		zap.String("pid", pidString(l.stalePID)))
	h, err := pcihost.New(root)
	if err != nil {
		return err
	}
	for _, p := range ports {
		if !p.HasPCI() {
			continue
		}
		a, err := pci.ParseAddr(p.PCI)
		if err != nil {
			return fmt.Errorf("port %s: %w", p.Name, err)
		}
		qp, err := h.Quiesce(a)
		if err != nil && staleQuiesceOptional(p, err) {
			log.Warn("cannot quiesce without privileges; vfio-pci quiesced and reset it when the dead run's descriptors closed",
				zap.String("port", p.Name), zap.Stringer("pci", a), zap.Error(err))
			continue
		}
		if err != nil {
			return fmt.Errorf("port %s: %w", p.Name, err)
		}
		log.Info("quiesced", zap.String("port", p.Name), zap.Stringer("pci", a),
			zap.String("command", fmt.Sprintf("%#04x -> %#04x", qp.Command, qp.NewCommand)), zap.Bool("reset", qp.ResetPath != ""))
	}
	return nil
}

// RunningPID reports whether a uiod run holds the state directory <root>/<stateDir>
// now, and its pid (0 if its pid file is unreadable). A missing directory or pid file,
// or one whose lock nobody holds, is not running.
func RunningPID(root, stateDir string) (pid int, running bool, err error) {
	h, err := config.StateHost(root)
	if err != nil {
		return 0, false, err
	}
	dir, err := h.OpenStateDir(stateDir, false)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer dir.Close()
	f, err := dir.Open(pidFileName, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	pid = readPID(f)
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return pid, true, nil
		}
		return pid, false, err
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return pid, false, nil
}
