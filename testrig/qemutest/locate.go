package qemutest

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrMissing is wrapped by every error that says a tool or kernel the guest needs is not on
// this machine; tests skip on it (see Start).
var ErrMissing = errors.New("QEMU guest prerequisite missing")

// setupHint is how to get what is missing.
const setupHint = "run scripts/qemu-setup.sh as root"

// modulePath is the module path of the repository the harness builds from.
const modulePath = "github.com/uiod/uiod"

// RepoRoot returns the root of the uiod repository: the first directory upward from the
// working directory whose go.mod declares the uiod module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// QEMU returns the path of qemu-system-x86_64 (env UIOD_QEMU overrides the search of PATH).
func QEMU() (string, error) {
	if p := os.Getenv("UIOD_QEMU"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: UIOD_QEMU: %w", ErrMissing, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return "", fmt.Errorf("%w: qemu-system-x86_64 not found: %s", ErrMissing, setupHint)
	}
	return p, nil
}

// Busybox returns the path of a statically linked busybox (env UIOD_BUSYBOX overrides the
// usual places). A dynamically linked one cannot run in the initramfs and is skipped.
func Busybox() (string, error) {
	cands := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p := os.Getenv("UIOD_BUSYBOX"); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		if static, err := isStatic(p); err == nil && static {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: static busybox not found in %s: %s (package busybox-static)",
		ErrMissing, strings.Join(cands, ", "), setupHint)
}

// isStatic reports whether the ELF executable at p needs no program interpreter.
func isStatic(p string) (bool, error) {
	f, err := elf.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// Kernel is a guest kernel: its image and, for a modular kernel, its module tree.
type Kernel struct {
	Name    string // what the messages call it, e.g. "debian 6.1.0-57-amd64"
	Image   string // bzImage / vmlinuz
	Modules string // lib/modules/<version> directory; "" when the drivers are built in
}

// Modular reports whether the kernel loads its drivers from modules.
func (k Kernel) Modular() bool { return k.Modules != "" }

// DebianKernel returns the Debian kernel that scripts/qemu-setup.sh extracts into
// .cache/qemu/debian-kernel in the repository (env UIOD_QEMU_CACHE overrides .cache/qemu):
// its uncompressed boot/vmlinux-* when that has a PVH entry, else boot/vmlinuz-*.
func DebianKernel() (Kernel, error) {
	cache := os.Getenv("UIOD_QEMU_CACHE")
	if cache == "" {
		root, err := RepoRoot()
		if err != nil {
			return Kernel{}, err
		}
		cache = filepath.Join(root, ".cache", "qemu")
	}
	dir := filepath.Join(cache, "debian-kernel")
	images, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(images) == 0 {
		return Kernel{}, fmt.Errorf("%w: debian kernel not found in %s: %s", ErrMissing, dir, setupHint)
	}
	sort.Strings(images)
	img := images[len(images)-1]
	ver := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
	mods := filepath.Join(dir, "lib", "modules", ver)
	if _, err := os.Stat(filepath.Join(mods, "kernel")); err != nil {
		return Kernel{}, fmt.Errorf("%w: debian kernel %s has no modules in %s: %s", ErrMissing, ver, mods, setupHint)
	}
	// The uncompressed vmlinux boots directly through its PVH entry, without seconds of
	// decompression under TCG; qemu-setup.sh extracts it where it can.
	if vmlinux := filepath.Join(dir, "boot", "vmlinux-"+ver); hasPVHEntry(vmlinux) {
		img = vmlinux
	}
	return Kernel{Name: "debian " + ver, Image: img, Modules: mods}, nil
}

// SharedKernelImage is the file name of the shared kernel with every driver built in, VFIO
// no-IOMMU mode and the iommufd/cdev interface included.
const SharedKernelImage = "bzImage-6.12.117-vfio"

// SharedKernel returns the shared kernel image: from env UIOD_SHARED (the shared/ directory)
// if set, else ../shared/qemu/ beside the repository (where CI puts it), else
// /work/shared/qemu/.
func SharedKernel() (Kernel, error) {
	var dirs []string
	if d := os.Getenv("UIOD_SHARED"); d != "" {
		dirs = append(dirs, filepath.Join(d, "qemu"))
	} else {
		if root, err := RepoRoot(); err == nil {
			dirs = append(dirs, filepath.Join(filepath.Dir(root), "shared", "qemu"))
		}
		dirs = append(dirs, "/work/shared/qemu")
	}
	for _, d := range dirs {
		p := filepath.Join(d, SharedKernelImage)
		if _, err := os.Stat(p); err == nil {
			return Kernel{Name: "shared " + strings.TrimPrefix(SharedKernelImage, "bzImage-"), Image: p}, nil
		}
	}
	return Kernel{}, fmt.Errorf("%w: shared kernel %s not found in %s", ErrMissing, SharedKernelImage, strings.Join(dirs, ", "))
}
