package pcihost

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/internal/hw/pcispec"
)

// ErrOutsideRoot is wrapped by errors about a path that would resolve outside the host
// root: a ".." above it, or a symlink leading out of it.
var ErrOutsideRoot = errors.New("outside the root")

// ErrTooLarge is wrapped by errors about a host file larger than the bound its reader sets.
var ErrTooLarge = errors.New("too large")

// Size bounds of host files.
const (
	// MaxAttrSize bounds a sysfs attribute (the kernel's attributes are at most a page).
	MaxAttrSize = 4096
	// MaxConfigSize bounds a function's config file (PCIe extended config space).
	MaxConfigSize = pcispec.ExtConfigLen
	// MaxStateSize bounds a state file (bind records, the pid file).
	MaxStateSize = 8 << 10
	// maxRouteTableSize bounds /proc/net/route and /proc/net/ipv6_route.
	maxRouteTableSize = 64 << 20
)

// maxLinks is how many symlinks one resolution follows, as the kernel's limit.
const maxLinks = 40

// splitRel splits a root-relative path (slash separated; a leading "/" is the root).
func splitRel(rel string) []string {
	return strings.Split(filepath.ToSlash(rel), "/")
}

// containedPath resolves rel under root, following symlinks but refusing (ErrOutsideRoot)
// a ".." above the root, a symlink with an absolute target, and a symlink whose target
// climbs out of the root. With followFinal false the last element is not followed. A
// missing element ends the resolution: the rest is applied lexically, still refusing
// escapes, and the caller's own open or stat reports the missing file.
//
// Resolution by path leaves a window between the check and the use; on Linux, openIn
// uses openat2(RESOLVE_BENEATH), which has none, and falls back to this on old kernels.
func containedPath(root, rel string, followFinal bool) (string, error) {
	if root == "/" {
		return filepath.Join(root, rel), nil // nothing is outside "/"
	}
	var stack []string // resolved elements below root
	todo := splitRel(rel)
	links := 0
	missing := false
	escape := func() (string, error) {
		return "", fmt.Errorf("%s: %w %s", clip.String(rel), ErrOutsideRoot, root)
	}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return escape()
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if missing || (len(todo) == 0 && !followFinal) {
			stack = append(stack, c)
			continue
		}
		p := filepath.Join(root, filepath.Join(stack...), c)
		fi, err := os.Lstat(p)
		if err != nil {
			missing = true
			stack = append(stack, c)
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			stack = append(stack, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", clip.String(rel))
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(t) {
			return escape()
		}
		todo = append(splitRel(t), todo...)
	}
	return filepath.Join(root, filepath.Join(stack...)), nil
}

// openIn opens rel under root like os.OpenFile, resolving symlinks only inside root.
// Under root "/" nothing can leave the root and the path is opened as is.
func openIn(root, rel string, flag int, perm os.FileMode) (*os.File, error) {
	if root == "/" {
		return os.OpenFile(filepath.Join(root, rel), flag, perm)
	}
	if f, err, ok := openBeneath(root, rel, flag, perm); ok {
		return f, err
	}
	p, err := containedPath(root, rel, flag&oNoFollow == 0)
	if err != nil {
		return nil, err
	}
	// The resolved path has no symlink left: refuse one that appeared since.
	return os.OpenFile(p, flag|oNoFollow, perm)
}

// readRegular reads f, which must be a regular file, refusing more than max bytes.
func readRegular(f *os.File, max int) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", f.Name(), fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", f.Name(), ErrTooLarge, max)
	}
	return b, nil
}

// readIn reads the regular file rel under root: opened without blocking (a FIFO or a
// device node in its place is refused, not waited on) and at most max bytes.
func readIn(root, rel string, max int) ([]byte, error) {
	f, err := openIn(root, rel, os.O_RDONLY|oNonblock|oNoCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, max)
}
