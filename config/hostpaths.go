package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/wire"
)

// CheckHostPaths checks the host paths of the configuration against the host root (a
// --root prefix; "" means "/"), as Loader.Load does with Loader.Root:
//
//   - state_dir is a host path under the root ("/run/uiod" is <root>/run/uiod): it must
//     resolve inside the root, every symlink on the way followed only inside it, and
//     when it exists be uiod's own (pcihost.Host.CheckStateDir: not a symlink, owned by root,
//     not group or world writable, holding nothing but uiod's files).
//   - A unix wire's socket paths are the paths other programs (QEMU, uiod latency) use
//     as they are, so they are not moved under the root: under a root other than "/"
//     each must lie inside it and resolve inside it, else it is refused.
//
// Under "/" nothing is outside the root, and only state_dir's own rules apply. The result is a *ValidationError naming the
// keys, or nil. Nothing is created or written; symlinks are read. The check is by path:
// the daemon, which binds the sockets, also opens their directories inside the root and
// uses those (package daemon), so a rename after the check cannot move them out.
func (c *Config) CheckHostPaths(root string) error {
	return c.checkHostPaths(root).err()
}

func (c *Config) checkHostPaths(root string) fieldErrors {
	var errs fieldErrors
	if root == "" {
		root = "/"
	}
	if !filepath.IsAbs(root) {
		abs, err := filepath.Abs(root)
		if err != nil {
			errs.add("state_dir", c.StateDir, "root %s: %v", clip.String(root), err)
			return errs
		}
		root = abs
	}
	root = filepath.Clean(root)
	// No directory at root: nothing under it resolves or exists yet (h is nil), and the
	// daemon's opening it fails later.
	h, _ := StateHost(root)
	if h != nil && c.StateDir != "" && filepath.IsAbs(c.StateDir) && !hasDotDot(c.StateDir) {
		if _, err := h.Path(c.StateDir); err != nil {
			errs.add("state_dir", c.StateDir, "%s", outsideMsg(err, root))
		} else if err := h.CheckStateDir(c.StateDir); err != nil {
			errs.add("state_dir", c.StateDir, "%v", err)
		}
	}
	if root == "/" {
		return errs
	}
	for i, p := range c.Ports {
		if p.Wire.Kind != wire.KindUnix {
			continue
		}
		for _, sock := range []string{p.Wire.Local, p.Wire.Remote} {
			if msg := unixPathOutside(h, root, sock); msg != "" {
				errs.add(fmt.Sprintf("ports[%d].wire", i), p.Wire.String(), "socket %s %s", clip.String(sock), msg)
			}
		}
	}
	return errs
}

// unixPathOutside returns why the socket path sock is not inside root (h, nil when there
// is no directory at root), or "".
func unixPathOutside(h *pcihost.Host, root, sock string) string {
	abs, err := filepath.Abs(sock)
	if err != nil {
		return err.Error()
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Sprintf("is outside the root %s (under --root, unix wire sockets must lie inside it)", root)
	}
	if h == nil {
		return ""
	}
	if _, err := h.Path(rel); err != nil {
		return outsideMsg(err, root)
	}
	return ""
}

// outsideMsg phrases a failed resolution under root.
func outsideMsg(err error, root string) string {
	if errors.Is(err, pcihost.ErrOutsideRoot) {
		return fmt.Sprintf("resolves outside the root %s (a \"..\" above it or a symlink out of it)", root)
	}
	return fmt.Sprintf("cannot be resolved under the root %s: %v", root, err)
}

// hasDotDot reports whether the slash-separated path p has a ".." element.
func hasDotDot(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..")
}
