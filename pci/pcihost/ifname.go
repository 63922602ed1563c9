package pcihost

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/uiod/uiod/pci"
)

// netClassDir is where the kernel lists network interfaces, each a link into the
// directory of the device it belongs to.
const netClassDir = "sys/class/net"

// ErrNoInterface is wrapped by errors about a name that is no network interface of the
// host, or one that is not on a PCI function.
var ErrNoInterface = errors.New("no such network interface")

// maxIfName is the longest interface name the kernel takes (IFNAMSIZ less the NUL).
const maxIfName = 15

// InterfaceAddr returns the PCI function of the kernel network interface name ("ens3f0"),
// as dpdk-devbind resolves one: the function <root>/sys/class/net/NAME/device is, or
// the nearest PCI function above it (virtio-net's device is virtio0, a child of the
// function). A name that is no interface, or one not on a PCI function (lo, a bridge),
// wraps ErrNoInterface.
func (h *Host) InterfaceAddr(name string) (pci.Addr, error) {
	if name == "" || len(name) > maxIfName || name == "." || name == ".." || strings.ContainsAny(name, "/ \t\n\x00:") {
		return pci.Addr{}, fmt.Errorf("%q: not a network interface name: %w", name, ErrNoInterface)
	}
	rel := netClassDir + "/" + name + "/device"
	p, err := containedPath(h.root, rel, true)
	if err == nil && h.root == "/" {
		p, err = filepath.EvalSymlinks(p) // containedPath resolves nothing under "/"
	}
	if errors.Is(err, os.ErrNotExist) || err == nil && !h.isDir(p) {
		if _, serr := h.stat(netClassDir + "/" + name); serr != nil {
			return pci.Addr{}, fmt.Errorf("%s: %w (no %s)", name, ErrNoInterface, h.path(netClassDir, name))
		}
		return pci.Addr{}, fmt.Errorf("%s: %w on a PCI function (%s has no device)", name, ErrNoInterface, h.path(netClassDir, name))
	}
	if err != nil {
		return pci.Addr{}, fmt.Errorf("interface %s: %w", name, err)
	}
	rest, err := h.relOf(p)
	if err != nil {
		return pci.Addr{}, fmt.Errorf("interface %s: %w", name, err)
	}
	for dir := path.Clean("/" + filepath.ToSlash(rest)); dir != "/"; dir = path.Dir(dir) {
		a, err := pci.ParseAddr(path.Base(dir))
		if err != nil || len(path.Base(dir)) != 12 {
			continue
		}
		if ok, err := h.exists(a); err != nil || !ok {
			return pci.Addr{}, fmt.Errorf("%s: %w on a PCI function: %s is not in %s", name, ErrNoInterface, a, h.path(devicesDir))
		}
		return a, nil
	}
	return pci.Addr{}, fmt.Errorf("%s: %w on a PCI function (its device is %s)", name, ErrNoInterface, p)
}

// isDir reports whether the resolved path p is a directory.
func (h *Host) isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// ParseFunction parses a function argument as dpdk-devbind takes one: a PCI address
// (ParseAddr's forms) or a network interface name resolved by InterfaceAddr. An
// argument that is neither wraps ErrBadAddr, naming both readings.
func (h *Host) ParseFunction(s string) (pci.Addr, error) {
	a, aerr := pci.ParseAddr(s)
	if aerr == nil {
		return a, nil
	}
	a, err := h.InterfaceAddr(s)
	if err == nil {
		return a, nil
	}
	if errors.Is(err, ErrNoInterface) {
		return pci.Addr{}, fmt.Errorf("%w %q: neither DDDD:BB:DD.F nor BB:DD.F, nor a network interface: %v", pci.ErrBadAddr, s, err)
	}
	return pci.Addr{}, err
}
