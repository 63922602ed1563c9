package pcitest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Write is one write a Kernel received.
type Write struct {
	// Path is the full path written, including the tree's root.
	Path string
	// Value is the exact value written.
	Value string
}

// String formats the write as "path <- value".
func (w Write) String() string { return fmt.Sprintf("%s <- %q", w.Path, w.Value) }

// Kernel is a fake of the Linux PCI core for a Tree. It implements pcihost.Writer and
// pcihost.Host.Modprobe: every write lands in the tree's file and is recorded, and then the
// kernel reacts as Linux does — driver_override is stored, drivers/D/unbind removes the
// driver link, drivers/D/bind and drivers_probe bind the function (to its override, or
// its native driver when there is none), the noiommu parameter turns to "Y". Failures
// and lost reactions can be injected to test rollback.
type Kernel struct {
	tree *Tree

	mu        sync.Mutex
	writes    []Write
	modprobes []string
	fail      map[string]error
	failNext  map[string]error
	ignore    map[string]bool
	modErr    error
}

// Kernel returns a fake kernel for the tree.
func (tr *Tree) Kernel() *Kernel {
	return &Kernel{tree: tr, fail: map[string]error{}, failNext: map[string]error{}, ignore: map[string]bool{}}
}

// FailWrite makes every write to rel (relative to the root) fail with err, without
// changing the file.
func (k *Kernel) FailWrite(rel string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail[filepath.Clean(filepath.FromSlash(rel))] = err
}

// FailNext makes the next write to rel fail with err, without changing the file; later
// writes succeed.
func (k *Kernel) FailNext(rel string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failNext[filepath.Clean(filepath.FromSlash(rel))] = err
}

// IgnoreWrite makes writes to rel land in the file, but the kernel does not react to them
// (a probe that binds nothing, an unbind that does not unbind).
func (k *Kernel) IgnoreWrite(rel string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ignore[filepath.Clean(filepath.FromSlash(rel))] = true
}

// FailModprobe makes Modprobe fail with err.
func (k *Kernel) FailModprobe(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.modErr = err
}

// Writes returns the writes received so far, in order, including failed ones.
func (k *Kernel) Writes() []Write {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Write(nil), k.writes...)
}

// Modprobes returns the modules loaded so far.
func (k *Kernel) Modprobes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.modprobes...)
}

// Modprobe "loads" a module: it registers the driver of that name.
func (k *Kernel) Modprobe(module string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.modprobes = append(k.modprobes, module)
	if k.modErr != nil {
		return k.modErr
	}
	return k.tree.addDriver(module)
}

// WriteFile writes value to path and reacts to it.
func (k *Kernel) WriteFile(path, value string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writes = append(k.writes, Write{path, value})
	rel, err := filepath.Rel(k.tree.Root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("pcitest: write outside the tree: %s", path)
	}
	if err := k.fail[rel]; err != nil {
		return err
	}
	if err := k.failNext[rel]; err != nil {
		delete(k.failNext, rel)
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || k.ignore[rel] {
		return err
	}
	return k.react(filepath.ToSlash(rel), path, strings.TrimSpace(value))
}

// react applies the kernel's reaction to a write of v to rel.
func (k *Kernel) react(rel, path, v string) error {
	parts := strings.Split(rel, "/")
	switch {
	case rel == "sys/bus/pci/drivers_probe":
		if err := k.checkDevice(v); err != nil {
			return err
		}
		if k.tree.Driver(v) != "" {
			return nil
		}
		drv := k.override(v)
		if drv == "" {
			drv = k.tree.native[v]
		}
		if drv != "" && k.driverExists(drv) {
			return k.tree.linkDriver(v, drv)
		}
		return nil
	case len(parts) == 6 && strings.Join(parts[:4], "/") == "sys/bus/pci/drivers":
		drv, op := parts[4], parts[5]
		switch op {
		case "unbind":
			if err := k.checkDevice(v); err != nil {
				return err
			}
			if k.tree.Driver(v) != drv {
				return syscall.ENODEV
			}
			return k.tree.unlinkDriver(v, drv)
		case "bind":
			if err := k.checkDevice(v); err != nil {
				return err
			}
			if k.tree.Driver(v) != "" {
				return syscall.EBUSY
			}
			if ov := k.override(v); ov != "" && ov != drv {
				return syscall.ENODEV
			}
			return k.tree.linkDriver(v, drv)
		}
	case len(parts) == 6 && strings.Join(parts[:4], "/") == "sys/bus/pci/devices" && parts[5] == "driver_override":
		if v == "" {
			return os.WriteFile(path, []byte("(null)\n"), 0o644)
		}
		return os.WriteFile(path, []byte(v+"\n"), 0o644)
	case len(parts) == 6 && strings.Join(parts[:4], "/") == "sys/bus/pci/devices" && parts[5] == "sriov_numvfs":
		return k.setVFs(parts[4], path, v)
	case rel == "sys/module/vfio/parameters/enable_unsafe_noiommu_mode":
		switch v {
		case "1", "Y", "y":
			return os.WriteFile(path, []byte("Y\n"), 0o644)
		case "0", "N", "n":
			return os.WriteFile(path, []byte("N\n"), 0o644)
		}
		return syscall.EINVAL
	}
	return nil
}

// setVFs reacts to a write of v to pf's sriov_numvfs (at path): the count is created
// or refused, and a refused write leaves the old count in the file, as sysfs does.
func (k *Kernel) setVFs(pf, path, v string) error {
	old := strconv.Itoa(k.tree.NumVFs(pf))
	n, err := strconv.Atoi(v)
	if err == nil {
		err = k.tree.SetVFs(pf, n)
	} else {
		err = syscall.EINVAL
	}
	if err != nil {
		if werr := os.WriteFile(path, []byte(old+"\n"), 0o644); werr != nil {
			return werr
		}
	}
	return err
}

func (k *Kernel) checkDevice(addr string) error {
	if _, err := os.Stat(k.tree.Path("sys/bus/pci/devices/" + addr)); err != nil {
		return syscall.ENODEV
	}
	return nil
}

func (k *Kernel) override(addr string) string {
	s := strings.TrimSpace(k.tree.ReadFile("sys/bus/pci/devices/" + addr + "/driver_override"))
	if s == "(null)" {
		return ""
	}
	return s
}

func (k *Kernel) driverExists(drv string) bool {
	_, err := os.Stat(k.tree.Path("sys/bus/pci/drivers/" + drv))
	return !errors.Is(err, os.ErrNotExist)
}
