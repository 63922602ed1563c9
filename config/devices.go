package config

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// CheckDevices checks every PCI port whose function exists under the host root (a
// --root prefix; "" means "/") against the NIC driver its nic: names: the function's
// vendor:device must be one that driver opens (nic.Lookup), or, for nic: auto, one some
// driver opens. A port whose function does not exist is not checked (it may not be
// bound yet, or the configuration is for another machine). The result is a
// *ValidationError naming ports[i].nic, the device and the nic: that fits, or nil.
// Nothing is written.
func (c *Config) CheckDevices(root string) error { return c.checkDevices(root).err() }

func (c *Config) checkDevices(root string) fieldErrors {
	var errs fieldErrors
	h, err := pcihost.New(cmp.Or(root, "/"))
	if err != nil {
		return errs // no host tree under root: no ids to compare with
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Driver == DriverSim || !slices.Contains(nicNames(), p.NIC) {
			continue // no device, or a nic: validation refuses
		}
		a, err := pci.ParseAddr(p.PCI)
		if err != nil {
			continue // reported by validation
		}
		path := fmt.Sprintf("ports[%d].nic", i)
		vendor, device, ok, err := h.DeviceIDs(a)
		if err != nil {
			errs.add(path, p.NIC, "port %s: cannot read the ids of %s: %v", p.Name, a, err)
			continue
		}
		if !ok {
			continue
		}
		if msg := nicMismatch(p.NIC, uint16(vendor), uint16(device)); msg != "" {
			errs.add(path, p.NIC, "port %s: %s is %s, %s", p.Name, a, deviceName(uint16(vendor), uint16(device)), msg)
			continue
		}
		if p.NIC == NICAuto {
			errs = append(errs, identified(i, p, a, uint16(vendor), uint16(device))...)
		}
	}
	return errs
}

// identified checks a nic: auto port, now that its function is known to be
// vendor:device, against what the driver auto picks for it takes, as a port naming that
// driver is checked at validation.
func identified(i int, p *Port, a pci.Addr, vendor, device uint16) fieldErrors {
	d, err := nic.Lookup(vendor, device, NICAuto)
	if err != nil {
		return nil
	}
	q := *p
	q.NIC = d.Name
	var found fieldErrors
	checkLimits(&found, i, &q)
	checkFacts(&found, i, &q)
	for j := range found {
		found[j].Msg = fmt.Sprintf("port %s: %s is %s (nic: auto drives it with %s): %s", p.Name, a, deviceName(vendor, device), d.Name, found[j].Msg)
	}
	return found
}

// nicMismatch says why the NIC driver name cannot open vendor:device and which nic:
// would, or returns "" if it can.
func nicMismatch(name string, vendor, device uint16) string {
	if _, err := nic.Lookup(vendor, device, name); err == nil {
		return ""
	}
	fit, err := nic.Lookup(vendor, device, NICAuto)
	if err != nil {
		return "which no uiod NIC driver supports (supported are " + nic.Supported(NICAuto) + ")"
	}
	return fmt.Sprintf("which nic: %s does not drive: use nic: %s (or auto)", name, fit.Name)
}

// deviceName is vendor:device with the model's name when a NIC driver knows it.
func deviceName(vendor, device uint16) string {
	id := nic.DeviceID{Vendor: vendor, Device: device}
	if d, err := nic.Lookup(vendor, device, NICAuto); err == nil {
		for _, known := range d.Devices {
			if known.Vendor == vendor && known.Device == device {
				id = known
			}
		}
	}
	return id.String()
}
