package qemutest

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"strings"
)

// initramfsConfig is what goes into a guest's initramfs.
type initramfsConfig struct {
	Busybox string   // static busybox on the host
	Init    string   // the /init script
	Script  string   // /etc/uiod/run.sh
	Kernel  Kernel   // its modules, when modular
	Modules []string // module names to load
	Files   []Entry  // extra files
}

// writeInitramfs writes a gzip-compressed newc initramfs to file.
func writeInitramfs(file string, c initramfsConfig) (err error) {
	entries, err := c.entries()
	if err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	// Fast compression: the archive is built for every boot, and the guest unpacks it quickly.
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return err
	}
	w := newNewcWriter(zw)
	for _, e := range entries {
		if err := w.add(e); err != nil {
			return err
		}
	}
	if err := w.close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// entries are the initramfs's files: the fixed tree, the kernel's modules when modular,
// then c.Files.
func (c initramfsConfig) entries() ([]Entry, error) {
	entries := []Entry{
		{Name: "dev", Mode: ModeDir | 0o755},
		{Name: "dev/console", Mode: ModeCharDev | 0o600, Major: 5, Minor: 1},
		{Name: "proc", Mode: ModeDir | 0o755},
		{Name: "sys", Mode: ModeDir | 0o755},
		{Name: "tmp", Mode: ModeDir | 0o1777},
		{Name: "run", Mode: ModeDir | 0o755},
		{Name: "sbin", Mode: ModeDir | 0o755},
		{Name: "bin/busybox", Mode: ModeRegular | 0o755, Source: c.Busybox},
		{Name: "bin/sh", Mode: ModeSymlink | 0o777, Link: "busybox"},
		{Name: "init", Mode: ModeRegular | 0o755, Data: []byte(c.Init)},
		{Name: "etc/uiod/run.sh", Mode: ModeRegular | 0o755, Data: []byte(c.Script)},
		{Name: "etc/uiod/lib.sh", Mode: ModeRegular | 0o644, Data: []byte(GuestLib)},
	}
	if c.Kernel.Modular() {
		mods, err := ResolveModules(c.Kernel.Modules, c.Modules)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", c.Kernel.Name, err)
		}
		ver := path.Base(c.Kernel.Modules)
		dir := "lib/modules/" + ver + "/"
		var order strings.Builder
		for _, m := range mods {
			entries = append(entries, Entry{Name: dir + m.Rel, Mode: ModeRegular | 0o644, Data: m.Data})
			order.WriteString(m.Rel + "\n")
		}
		entries = append(entries,
			Entry{Name: dir + "modules.dep", Mode: ModeRegular | 0o644, Data: ModulesDep(mods)},
			Entry{Name: "etc/uiod/modules", Mode: ModeRegular | 0o644, Data: []byte(order.String())})
		for _, name := range []string{"modules.builtin", "modules.order"} {
			if _, err := os.Stat(c.Kernel.Modules + "/" + name); err == nil {
				entries = append(entries, Entry{Name: dir + name, Mode: ModeRegular | 0o644, Source: c.Kernel.Modules + "/" + name})
			}
		}
	}
	entries = append(entries, c.Files...)
	return entries, nil
}
