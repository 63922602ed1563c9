package pci

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// ErrNoDevice is wrapped by errors about an address that names no PCI function on the host.
var ErrNoDevice = errors.New("no such PCI device")

// Host is a Linux host's PCI subsystem seen through sysfs and procfs under a root prefix.
// Every path it reads or writes is Root joined with the kernel's path, so the same code
// serves the real host (Root "/"), a container that mounts the host at /host, and fixture
// trees in tests (see package pcitest).
//
// The zero value of every field but Root is ready to use. A Host caches the pci.ids
// database after its first use; it is safe for concurrent use once its fields are set.
type Host struct {
	// Root is the prefix of every host path; "" means "/".
	Root string
	// Warn receives warnings that do not stop the operation, such as a missing pci.ids
	// database. Nil discards them.
	Warn func(msg string)
	// Writer performs every write to sysfs and procfs. Nil writes the files directly.
	Writer Writer
	// Modprobe loads a kernel module. Nil runs "modprobe NAME".
	Modprobe func(module string) error

	idsOnce sync.Once
	ids     *idDB
}

// Writer writes one value to one host file (a sysfs attribute), as a single write.
// Tests replace it with a fake kernel that records writes and reacts to them.
type Writer interface {
	WriteFile(path, value string) error
}

// fileWriter writes values to existing files; it never creates one, since a sysfs attribute
// that does not exist means the kernel does not offer it.
type fileWriter struct{}

func (fileWriter) WriteFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(value))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h *Host) root() string {
	if h.Root == "" {
		return "/"
	}
	return h.Root
}

// path returns the host path rel (relative to the root, slash separated) under Root.
func (h *Host) path(rel ...string) string {
	return filepath.Join(append([]string{h.root()}, rel...)...)
}

// devDir returns the sysfs directory of a function.
func (h *Host) devDir(a Addr) string {
	return h.path("sys/bus/pci/devices", a.String())
}

// driverDir returns the sysfs directory of a PCI driver.
func (h *Host) driverDir(driver string) string {
	return h.path("sys/bus/pci/drivers", driver)
}

func (h *Host) warn(msg string) {
	if h.Warn != nil {
		h.Warn(msg)
	}
}

func (h *Host) write(path, value string) error {
	w := h.Writer
	if w == nil {
		w = fileWriter{}
	}
	return w.WriteFile(path, value)
}

func (h *Host) modprobe(module string) error {
	if h.Modprobe != nil {
		return h.Modprobe(module)
	}
	out, err := exec.Command("modprobe", module).CombinedOutput()
	if err != nil {
		return fmt.Errorf("modprobe %s: %w: %s", module, err, out)
	}
	return nil
}

// exists reports whether the function has a sysfs directory.
func (h *Host) exists(a Addr) (bool, error) {
	_, err := os.Stat(h.devDir(a))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
