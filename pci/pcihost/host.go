// Package pcihost is uiod's sysfs host tool: it finds, describes, binds, unbinds and
// quiesces PCI functions, plans SR-IOV virtual functions, reads IOMMU groups and keeps
// bind records in a checked state directory (docs/design.md §10).
//
// Host paths are always taken relative to a root prefix (see New), so that the same code
// serves the real host ("/"), a container that mounts the host elsewhere, and fixture trees
// in tests (package pcitest). Host is the one place that knows the sysfs layout
// (layout.go): the backends (vfio, uio) ask it for driver links, IOMMU groups, device
// nodes and attribute files. Nothing a Host reads or writes resolves outside its root
// (contain.go), reads are bounded and never block, and uiod's own state lives in a checked
// StateDir (statedir.go). It imports package pci, the drivers' seam, for addresses, ids
// and classes; pci never imports it.
package pcihost

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
)

// ErrNoDevice is wrapped by errors about an address that names no PCI function on the host.
var ErrNoDevice = errors.New("no such PCI device")

// Host is a Linux host's PCI subsystem seen through sysfs and procfs under a root prefix.
// Every path it reads or writes is resolved under its root, so the same code serves the
// real host (root "/"), a container that mounts the host at /host, and fixture trees in
// tests (see package pcitest). Nothing it does reaches outside the root: a ".." or a
// symlink that would lead out of it is refused (ErrOutsideRoot), on Linux by the kernel
// itself (openat2 with RESOLVE_BENEATH).
//
// New is the one way to make a Host. Its exported fields are hooks, set (if at all) before
// the Host is first used. A Host caches the pci.ids database after its first use; it is
// safe for concurrent use once its fields are set.
type Host struct {
	root string
	// Warn receives warnings that do not stop the operation, such as a missing pci.ids
	// database. Nil discards them.
	Warn func(msg string)
	// Writer performs every write to sysfs and procfs. Nil writes the files directly.
	Writer Writer
	// Modprobe loads a kernel module. Nil runs "modprobe NAME" when the root is "/"; under
	// another root a missing driver is an error, since the host's modprobe would load it
	// into the host, not under the root.
	Modprobe func(module string) error
	// StateFiles are the names, besides bind records, that a state directory may hold
	// (see OpenStateDir): those of the programs that share it with uiod bind, such as the
	// daemon's pid file and control socket (config.StateFiles; config.StateHost sets them). The host tool knows no
	// such name of its own.
	StateFiles []string

	idsOnce sync.Once
	ids     *idDB
}

// New returns the host under root, which must name an existing directory; "/" is the
// host itself. Relative roots are made absolute. An empty root is an error: a caller
// whose empty root means the host itself (a backend's Options.Root) says so with
// cmp.Or(root, "/").
func New(root string) (*Host, error) {
	if root == "" {
		return nil, errors.New("host root is empty (use / for the host itself)")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("host root %s: %w", clip.String(root), err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("host root %s: %w", clip.String(pe.Path), pe.Err)
		}
		return nil, fmt.Errorf("host root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("host root %s is not a directory", clip.String(root))
	}
	return &Host{root: filepath.Clean(abs)}, nil
}

// Root returns the host root: an absolute, clean path ("/" for the host itself).
func (h *Host) Root() string { return h.root }

// Writer writes one value to one host file (a sysfs attribute), as a single write.
// Tests replace it with a fake kernel that records writes and reacts to them.
type Writer interface {
	WriteFile(path, value string) error
}

// path returns the lexical host path of rel (slash separated elements of uiod's own
// choosing, never user input) under Root, for messages and plans. Reading or writing it
// goes through openIn, which checks where it really leads.
func (h *Host) path(rel ...string) string {
	return filepath.Join(append([]string{h.root}, rel...)...)
}

// relOf returns the root-relative form of a path made by h.path.
func (h *Host) relOf(path string) (string, error) {
	rel, err := filepath.Rel(h.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s: %w %s", path, ErrOutsideRoot, h.root)
	}
	return rel, nil
}

// Path returns where rel (slash separated; a leading "/" means the root) is under Root,
// with every symlink on the way resolved inside Root. A ".." above Root or a symlink out
// of it is an error wrapping ErrOutsideRoot: filepath.Join(root, "/../../x") escapes,
// Path(root, "/../../x") does not. A missing element is not an error; the rest of the
// path is joined as is. Use it for paths handed to other programs or APIs; to open a file
// use OpenFile, which leaves no window between the check and the open.
func (h *Host) Path(rel string) (string, error) {
	return containedPath(h.root, rel, true)
}

// OpenFile opens rel under Root like os.OpenFile, resolving symlinks only inside Root
// (ErrOutsideRoot otherwise).
func (h *Host) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	return openIn(h.root, rel, flag, perm)
}

// ReadFile reads the regular file rel under Root, at most max bytes (ErrTooLarge beyond).
// It never blocks: a FIFO or a device node in place of the file is refused.
func (h *Host) ReadFile(rel string, max int) ([]byte, error) {
	return readIn(h.root, rel, max)
}

func (h *Host) warn(msg string) {
	if h.Warn != nil {
		h.Warn(msg)
	}
}

// write writes value to the host file at path (made by h.path): through Writer if set,
// else directly. The file must be inside Root and a regular file (sysfs attributes are).
func (h *Host) write(path, value string) error {
	rel, err := h.relOf(path)
	if err != nil {
		return err
	}
	if h.Writer != nil {
		if _, err := h.Path(rel); err != nil {
			return err
		}
		return h.Writer.WriteFile(path, value)
	}
	return writeIn(h.root, rel, value)
}

// writeIn writes value to the existing regular file rel under root in one write. It never
// creates, truncates or blocks on a file: a sysfs attribute that does not exist means the
// kernel does not offer it.
func writeIn(root, rel, value string) error {
	f, err := openIn(root, rel, os.O_WRONLY|oNonblock|oNoCTTY, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s: not a regular file (%s)", f.Name(), fi.Mode().Type())
	case linkCount(fi) > 1:
		err = fmt.Errorf("%s: has %d hard links; a sysfs attribute has one", f.Name(), linkCount(fi))
	}
	if err == nil {
		_, err = f.Write([]byte(value))
	}
	if err == nil && fi.Size() > int64(len(value)) && !isKernelFS(f) {
		// A plain file standing in for an attribute (a fixture tree) holds just the
		// value afterwards, as the attribute would; sysfs has no length to cut.
		err = f.Truncate(int64(len(value)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h *Host) modprobe(module string) error {
	if h.Modprobe != nil {
		return h.Modprobe(module)
	}
	if h.root != "/" {
		return h.checkLoad([]string{module})
	}
	out, err := exec.Command("modprobe", module).CombinedOutput()
	if err != nil {
		return fmt.Errorf("modprobe %s: %w: %s", module, err, out)
	}
	return nil
}

// checkLoad refuses a plan that needs modules loaded under a root other than "/" without
// a Modprobe hook: the host's modprobe would load them into the host.
func (h *Host) checkLoad(modules []string) error {
	if len(modules) == 0 || h.Modprobe != nil || h.root == "/" {
		return nil
	}
	return fmt.Errorf("driver %s missing under root %s (uiod runs modprobe only for the root /: load it there)",
		strings.Join(modules, ", "), h.root)
}

// stat returns the FileInfo of rel under Root, symlinks resolved inside Root.
func (h *Host) stat(rel string) (os.FileInfo, error) {
	f, err := h.OpenFile(rel, oStat, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// readDir lists the directory rel under Root.
func (h *Host) readDir(rel string) ([]os.DirEntry, error) {
	f, err := h.OpenFile(rel, os.O_RDONLY|oDirectory, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// exists reports whether the function has a sysfs directory.
func (h *Host) exists(a pci.Addr) (bool, error) {
	_, err := h.stat(devicesDir + "/" + a.String())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
