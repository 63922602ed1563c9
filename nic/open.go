package nic

import (
	"encoding/binary"
	"fmt"

	"github.com/uiod/uiod/pci"
)

// Open brings up dev with the named driver, or with the one that matches its vendor and
// device id when name is "auto" or "" (see OpenDriver).
func Open(dev pci.Device, name string, cfg Config) (Port, error) {
	p, _, err := OpenDriver(dev, DeviceID{}, name, cfg)
	return p, err
}

// OpenDriver is the one path from an opened PCI function to a running port. It
// identifies dev once: from id, the vendor and device id its caller has already read
// (the daemon reads them from sysfs to refuse a function before its backend opens it),
// or, when id is the zero DeviceID, from dev's configuration space. It finds the driver
// for those ids (Lookup: the named one, or the one whose Match accepts them for "auto"
// or "") and opens the port with it, handing the driver dev with its id registers
// answered from that identification, so the driver's own check of what it was given reads
// nothing again. It returns the port and the driver that opened it.
//
// On error nothing is left open but dev, which the caller closes.
func OpenDriver(dev pci.Device, id DeviceID, name string, cfg Config) (Port, Driver, error) {
	if id == (DeviceID{}) {
		var err error
		if id.Vendor, id.Device, err = pci.ReadIDs(dev.Config()); err != nil {
			return nil, Driver{}, err
		}
	}
	d, err := Lookup(id.Vendor, id.Device, name)
	if err != nil {
		return nil, Driver{}, fmt.Errorf("%s: %w", dev.Addr(), err)
	}
	p, err := d.Open(identified(dev, id), cfg)
	if err != nil {
		return nil, Driver{}, err
	}
	return p, d, nil
}

// identified is dev as OpenDriver hands it to the driver: its configuration space
// answers reads of the vendor and device id registers from id, and everything else from
// the device.
func identified(dev pci.Device, id DeviceID) pci.Device {
	d := &idDevice{Device: dev}
	d.cfg.ConfigSpace = dev.Config()
	binary.LittleEndian.PutUint16(d.cfg.ids[pci.CfgVendorID:], id.Vendor)
	binary.LittleEndian.PutUint16(d.cfg.ids[pci.CfgDeviceID:], id.Device)
	return d
}

type idDevice struct {
	pci.Device
	cfg idSpace
}

// Config implements pci.Device.
func (d *idDevice) Config() pci.ConfigSpace { return &d.cfg }

// idSpace is a configuration space whose first four bytes (vendor and device id, which
// are read-only) are known.
type idSpace struct {
	pci.ConfigSpace
	ids [4]byte
}

// ReadAt implements io.ReaderAt: bytes below offset 4 come from ids, the rest from the
// device.
func (c *idSpace) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(c.ids)) {
		return c.ConfigSpace.ReadAt(p, off)
	}
	n := copy(p, c.ids[off:])
	if n == len(p) {
		return n, nil
	}
	m, err := c.ConfigSpace.ReadAt(p[n:], int64(len(c.ids)))
	return n + m, err
}
