package qemutest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultModules are the kernel modules a modular guest kernel loads, in this order (each
// after its dependencies): the vfio and uio stacks, and igb so that the NICs start out on
// their kernel driver and binding exercises unbinding it.
var DefaultModules = []string{
	"vfio", "vfio_iommu_type1", "vfio-pci", "vfio_pci_core", "irqbypass",
	"uio", "uio_pci_generic", "igb",
}

// Module is one kernel module to put into the initramfs.
type Module struct {
	Name    string   // canonical name: '-' written as '_'
	Rel     string   // path relative to lib/modules/<version>/, without a compression suffix
	Depends []string // direct dependencies (canonical names), from the .modinfo depends= field
	Data    []byte   // the uncompressed .ko
}

// ModuleName returns the canonical form of a module name: the kernel treats '-' and '_' as
// the same character and reports names with '_'.
func ModuleName(name string) string { return strings.ReplaceAll(name, "-", "_") }

// ParseModinfo parses the contents of a module's .modinfo section: NUL-separated
// "key=value" strings. A key may appear more than once (alias=, parm=); values are kept in
// order. Entries without '=' are an error naming the entry.
func ParseModinfo(b []byte) (map[string][]string, error) {
	info := make(map[string][]string)
	for _, e := range bytes.Split(b, []byte{0}) {
		if len(e) == 0 {
			continue // padding between entries
		}
		k, v, ok := bytes.Cut(e, []byte{'='})
		if !ok || len(k) == 0 {
			return nil, fmt.Errorf("modinfo entry %q: not key=value", e)
		}
		info[string(k)] = append(info[string(k)], string(v))
	}
	return info, nil
}

// modinfoDepends returns the direct dependencies recorded in an ELF kernel module.
func modinfoDepends(ko []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("parse ELF: %w", err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, errors.New("no .modinfo section")
	}
	b, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .modinfo: %w", err)
	}
	info, err := ParseModinfo(b)
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, v := range info["depends"] {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				deps = append(deps, ModuleName(d))
			}
		}
	}
	return deps, nil
}

// moduleSuffixes are the file name endings of kernel modules, compressed or not.
var moduleSuffixes = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

// ResolveModules finds the named modules and everything they depend on in dir (a
// lib/modules/<version> directory) and returns them dependencies first, each once. Modules
// listed in modules.builtin are skipped; a name found neither as a file nor as built in is
// an error. Compressed modules are uncompressed with xz, zstd or gzip.
func ResolveModules(dir string, names []string) ([]Module, error) {
	files := make(map[string]string) // canonical name → path
	err := filepath.WalkDir(filepath.Join(dir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		for _, s := range moduleSuffixes {
			if base, ok := strings.CutSuffix(d.Name(), s); ok {
				files[ModuleName(base)] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan modules: %w", err)
	}
	builtin, err := builtinModules(dir)
	if err != nil {
		return nil, err
	}

	var (
		out   []Module
		state = make(map[string]int) // 1 visiting, 2 done
	)
	var visit func(name string, from string) error
	visit = func(name, from string) error {
		name = ModuleName(name)
		switch state[name] {
		case 1:
			return fmt.Errorf("module %s: dependency cycle through %s", name, from)
		case 2:
			return nil
		}
		if builtin[name] {
			state[name] = 2
			return nil
		}
		p, ok := files[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("module %s (needed by %s): not found in %s", name, from, dir)
			}
			return fmt.Errorf("module %s: not found in %s", name, dir)
		}
		state[name] = 1
		data, err := readModule(p)
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		deps, err := modinfoDepends(data)
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range moduleSuffixes[1:] {
			if r, ok := strings.CutSuffix(rel, s); ok {
				rel = r + ".ko"
			}
		}
		out = append(out, Module{Name: name, Rel: filepath.ToSlash(rel), Depends: deps, Data: data})
		state[name] = 2
		return nil
	}
	for _, n := range names {
		if err := visit(n, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// builtinModules reads modules.builtin: one "kernel/…/name.ko" path a line.
func builtinModules(dir string) (map[string]bool, error) {
	m := make(map[string]bool)
	f, err := os.Open(filepath.Join(dir, "modules.builtin"))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		base := filepath.Base(strings.TrimSpace(s.Text()))
		if n, ok := strings.CutSuffix(base, ".ko"); ok {
			m[ModuleName(n)] = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read modules.builtin: %w", err)
	}
	return m, nil
}

// readModule returns the uncompressed contents of a module file.
func readModule(p string) ([]byte, error) {
	var tool []string
	switch {
	case strings.HasSuffix(p, ".xz"):
		tool = []string{"xz", "-dc", p}
	case strings.HasSuffix(p, ".zst"):
		tool = []string{"zstd", "-dcq", p}
	case strings.HasSuffix(p, ".gz"):
		tool = []string{"gzip", "-dc", p}
	default:
		return os.ReadFile(p)
	}
	out, err := exec.Command(tool[0], tool[1:]...).Output()
	if err != nil {
		return nil, fmt.Errorf("uncompress %s with %s: %w", p, tool[0], err)
	}
	return out, nil
}

// ModulesDep returns a modules.dep file (the format kmod's depmod writes and busybox
// modprobe reads) for mods, which must be in dependency order: one line a module, its path,
// then every module it needs directly or indirectly, the one to load last first.
func ModulesDep(mods []Module) []byte {
	idx := make(map[string]int, len(mods))
	for i, m := range mods {
		idx[m.Name] = i
	}
	var b bytes.Buffer
	for _, m := range mods {
		need := make(map[int]bool)
		var walk func(names []string)
		walk = func(names []string) {
			for _, d := range names {
				i, ok := idx[d]
				if !ok || need[i] {
					continue // built in, or already counted
				}
				need[i] = true
				walk(mods[i].Depends)
			}
		}
		walk(m.Depends)
		b.WriteString(m.Rel + ":")
		for i := len(mods) - 1; i >= 0; i-- {
			if need[i] {
				b.WriteString(" " + mods[i].Rel)
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
