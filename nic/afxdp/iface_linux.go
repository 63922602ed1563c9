//go:build linux

package afxdp

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"

	"github.com/vishvananda/netlink"
)

// ListInterfaces lists the network interfaces of the calling thread's namespace by
// name; the error is a failure to list them at all.
func ListInterfaces() (InterfaceList, error) {
	var l InterfaceList
	links, err := netlink.LinkList()
	if err != nil {
		return l, fmt.Errorf("rtnetlink link list: %w", err)
	}
	var feats map[int]DevFeatures
	if nd, err := DialNetdev(); err != nil {
		l.FeaturesErr = err
	} else {
		feats, l.FeaturesErr = nd.Devices()
		nd.Close()
	}
	for _, lk := range links {
		a := lk.Attrs()
		ifc := Interface{
			Name: a.Name, Index: a.Index, Kind: lk.Type(), MAC: a.HardwareAddr.String(), MTU: a.MTU,
			Up: a.Flags&net.FlagUp != 0, Running: operUp(lk),
		}
		ifc.Driver, ifc.PCI = deviceOf(a.Name)
		if n, err := rxQueues(a.Name, lk); err == nil {
			ifc.RxQueues = n
		}
		if f, ok := feats[a.Index]; ok {
			ifc.Features = &f
		}
		if id, desc := attachedProgram(lk); id != 0 {
			ifc.Program = desc
		}
		l.Interfaces = append(l.Interfaces, ifc)
	}
	sort.Slice(l.Interfaces, func(i, j int) bool { return l.Interfaces[i].Name < l.Interfaces[j].Name })
	return l, nil
}

// deviceOf reads the interface's device from sysfs: its driver's name and, if the
// device is a PCI function or sits on one (virtio0 under its virtio-pci function), the
// function's address.
func deviceOf(name string) (driver, pciAddr string) {
	dev := filepath.Join("/sys/class/net", name, "device")
	if d, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		driver = filepath.Base(d)
	}
	d, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return driver, ""
	}
	for _, p := range []string{d, filepath.Dir(d)} {
		if sub, err := os.Readlink(filepath.Join(p, "subsystem")); err == nil && filepath.Base(sub) == "pci" {
			return driver, filepath.Base(p)
		}
	}
	return driver, ""
}
