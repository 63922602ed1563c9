package dpdk

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/testrig/qemutest"
)

// plugins are the PMD files whose own libraries the guest needs as well.
func plugins() []string {
	var p []string
	for _, n := range pmds {
		p = append(p, filepath.Join(pmdDir, n))
	}
	return p
}

// closure returns initramfs entries for every shared library the ELF files need,
// transitively, and the dynamic loader, each at the path the loader looks in.
func closure(t *testing.T, bins []string) ([]qemutest.Entry, error) {
	seen := map[string]bool{}
	var entries []qemutest.Entry
	queue := append([]string(nil), bins...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		f, err := elf.Open(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		needed, err := f.ImportedLibraries()
		interp := ""
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err == nil {
					interp = strings.TrimRight(string(b), "\x00")
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if interp != "" && !seen[interp] {
			seen[interp] = true
			real, err := filepath.EvalSymlinks(interp)
			if err != nil {
				return nil, fmt.Errorf("loader %s: %w", interp, err)
			}
			entries = append(entries, executable(strings.TrimPrefix(interp, "/"), real))
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			path := ""
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"} {
				if fileExists(filepath.Join(dir, lib)) {
					path = filepath.Join(dir, lib)
					break
				}
			}
			if path == "" {
				return nil, fmt.Errorf("%s needs %s, which is not in the library directories", p, lib)
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return nil, err
			}
			// Everything under one directory in the guest, where LD_LIBRARY_PATH points —
			// but a library that is also a plugin stays one file: Debian keeps it in the
			// plugin directory with links to it, and EAL must not load it a second time
			// under another name (it panics on the second registration).
			if strings.HasPrefix(real, pmdDir+"/") {
				if !seen[real] {
					seen[real] = true
					entries = append(entries, qemutest.File(real[1:], real))
				}
				entries = append(entries, symlink("/lib/x86_64-linux-gnu/"+lib, real))
			} else {
				entries = append(entries, qemutest.File("lib/x86_64-linux-gnu/"+lib, real))
			}
			queue = append(queue, real)
		}
	}
	return entries, nil
}

// symlink is the entry for a symbolic link at the absolute path name to target.
func symlink(name, target string) qemutest.Entry {
	return qemutest.Entry{Name: strings.TrimPrefix(name, "/"), Mode: qemutest.ModeSymlink | 0o777, Link: target}
}

func executable(name, src string) qemutest.Entry {
	e := qemutest.File(name, src)
	e.Mode = qemutest.ModeRegular | 0o755
	return e
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// guestFiles are the guest's initramfs additions: uiod, testpmd and l3fwd-power with
// every library they and the PMDs load, the PMDs where EAL looks for them, and the host's
// pci.ids.
func guestFiles(t *testing.T, uiod, testpmd, l3fwd string) []qemutest.Entry {
	files := []qemutest.Entry{
		qemutest.Binary("uiod", uiod),
		qemutest.Binary("dpdk-testpmd", testpmd),
		qemutest.Binary("l3fwd-power", l3fwd),
	}
	libs, err := closure(t, append([]string{testpmd, l3fwd}, plugins()...))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, libs...)
	have := map[string]bool{}
	for _, e := range files {
		have[e.Name] = true
	}
	for _, p := range pmds {
		real, err := filepath.EvalSymlinks(filepath.Join(pmdDir, p))
		if err != nil {
			t.Fatalf("PMD %s: %v (apt-get install dpdk)", p, err)
		}
		if !have[real[1:]] {
			files = append(files, qemutest.File(real[1:], real))
			have[real[1:]] = true
		}
		files = append(files, symlink(filepath.Join(pmdDir, p), real))
	}
	if p := "/usr/share/misc/pci.ids"; fileExists(p) {
		files = append(files, qemutest.File(p[1:], p))
	}
	return files
}
