package qemutest

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// libDirs are where HostTools looks for a shared library the way the dynamic loader does
// without an ld.so.cache (Debian's multiarch directories first). A library found in one is
// installed at the same path in the guest, where the guest's loader looks too.
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// HostTools returns the initramfs entries that install each of the host's executables
// names (looked up in PATH, then /usr/sbin and /sbin) as /bin/<name> in the guest, with
// what a dynamically linked one needs to run there: its ELF interpreter and the shared
// libraries it loads (DT_NEEDED, recursively), each once. busybox --install does not
// replace a file, so a program that runs <name> through PATH (a Go test's exec.Command)
// gets the host's tool, iproute2's ip rather than busybox's; busybox's own shell still
// runs its applet for a bare `ip`, so a guest script names /bin/ip. A name not found, or
// a library not found in libDirs, is an error naming it.
func HostTools(names ...string) ([]Entry, error) {
	var entries []Entry
	seen := make(map[string]bool) // guest paths already added
	add := func(guest, host string, mode uint32) error {
		if seen[guest] {
			return nil
		}
		src, err := filepath.EvalSymlinks(host)
		if err != nil {
			return err
		}
		seen[guest] = true
		entries = append(entries, Entry{Name: strings.TrimPrefix(guest, "/"), Mode: ModeRegular | mode, Source: src})
		return nil
	}
	var libs func(file, of string) error
	libs = func(file, of string) error {
		f, err := elf.Open(file)
		if err != nil {
			return fmt.Errorf("%s: %w", of, err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: ELF interpreter: %w", of, err)
			}
			interp := strings.TrimRight(string(b), "\x00")
			if err := add(interp, interp, 0o755); err != nil {
				return fmt.Errorf("%s: ELF interpreter %s: %w", of, interp, err)
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", of, err)
		}
		for _, so := range needed {
			p, err := findLib(so)
			if err != nil {
				return fmt.Errorf("%s: %w", of, err)
			}
			if seen[p] {
				continue
			}
			if err := add(p, p, 0o755); err != nil {
				return fmt.Errorf("%s: library %s: %w", of, so, err)
			}
			if err := libs(p, so); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range names {
		p, err := lookTool(name)
		if err != nil {
			return nil, err
		}
		if err := add("/bin/"+name, p, 0o755); err != nil {
			return nil, fmt.Errorf("host tool %s: %w", name, err)
		}
		if err := libs(p, name); err != nil {
			return nil, fmt.Errorf("host tool %s: %w", name, err)
		}
	}
	return entries, nil
}

// lookTool finds the host executable name: in PATH, else in /usr/sbin or /sbin (a
// non-root PATH often lacks them).
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: host tool %s not found in PATH, /usr/sbin or /sbin", ErrMissing, name)
}

// findLib returns the path of shared library so in the first of libDirs that has it.
func findLib(so string) (string, error) {
	if strings.Contains(so, "/") {
		return so, nil
	}
	for _, d := range libDirs {
		p := filepath.Join(d, so)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("library %s: %w", so, err)
		}
	}
	return "", fmt.Errorf("library %s: not found in %s", so, strings.Join(libDirs, ", "))
}
