package pcihost

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
)

// isStateFile reports whether name is one of the files uiod keeps in a state directory:
// a bind record (<PCI address>.json), one of h.StateFiles (the daemon's pid file and
// control socket) or the temporary name one of them has before it is renamed into place
// (.<name>.tmp-<hex>).
func (h *Host) isStateFile(name string) bool {
	if tmp, ok := strings.CutPrefix(name, "."); ok {
		base, rnd, ok := strings.Cut(tmp, ".tmp-")
		return ok && isHex(rnd) && h.isStateFile(base) && !strings.HasPrefix(base, ".")
	}
	if slices.Contains(h.StateFiles, name) {
		return true
	}
	addr, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return false
	}
	a, err := pci.ParseAddr(addr)
	return err == nil && a.String() == addr
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkStateDirEntries refuses a state directory that holds anything but uiod's own
// files (isStateFile): one that other programs or people use — the root, /etc, /tmp, a
// home directory — is not somewhere uiod, running as root, should create and remove
// files. It reads the directory f (at path p) in chunks and stops at the first stranger.
func (h *Host) checkStateDirEntries(f *os.File, p string) error {
	others := ""
	for _, n := range h.StateFiles {
		others += n + ", "
	}
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if !h.isStateFile(n) {
				return fmt.Errorf("state directory %s holds %s, which is not uiod's: refusing a directory that is not uiod's own "+
					"(it may hold only %sbind records <address>.json and their temporary files; give state_dir an empty directory of its own, such as /run/uiod)",
					p, clip.Quote(n), others)
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(names) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("state directory %s: %w", p, err)
		}
	}
}

// CheckStateDir checks the state directory rel under Root as OpenStateDir would, without
// creating it: a missing directory is fine (it is created when needed), an existing one
// must be uiod's own.
func (h *Host) CheckStateDir(rel string) error {
	d, err := h.existingStateDir(rel)
	if d == nil {
		return err
	}
	return d.Close()
}

// existingStateDir is OpenStateDir(rel, false) with a missing directory not an error:
// then d and err are both nil.
func (h *Host) existingStateDir(rel string) (*StateDir, error) {
	d, err := h.OpenStateDir(rel, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return d, err
}
