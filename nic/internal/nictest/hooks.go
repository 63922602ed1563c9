package nictest

import (
	"sync/atomic"

	"github.com/uiod/uiod/pci"
)

// Hooks intercept the register accesses a driver makes to a device, for tests that record
// them, change what a register reads or cut the device off.
type Hooks struct {
	// Read sees every 32-bit read of BAR bar and returns what the driver reads (nil:
	// the device's value).
	Read func(bar int, off, v uint32) uint32
	// Write sees every write (size 1, 2, 4 or 8 bytes) before the device does; false
	// drops it (nil: every write goes through).
	Write func(bar int, off uint32, v uint64, size int) bool
	// Cut, while it holds true, drops every write before Write sees it (a device cut off
	// from its driver; cheaper than a Write hook on a benchmark's path).
	Cut *atomic.Bool
}

// Hooked is dev with its BAR regions' accesses passed through h.
func Hooked(dev pci.Device, h Hooks) pci.Device { return hookedDevice{dev, h} }

type hookedDevice struct {
	pci.Device
	h Hooks
}

func (d hookedDevice) Region(bar int) (pci.Region, error) {
	r, err := d.Device.Region(bar)
	if err != nil {
		return nil, err
	}
	return &hookedRegion{r, bar, d.h}, nil
}

// narrowRegion is a region with 8- and 16-bit accesses (virtio's common configuration).
type narrowRegion interface {
	Read8(off uint32) uint8
	Write8(off uint32, v uint8)
	Read16(off uint32) uint16
	Write16(off uint32, v uint16)
}

// hookedRegion runs the hooks around the region's accesses. It offers the narrow accesses
// of the region it wraps (a driver that needs them finds them; the others never call
// them).
type hookedRegion struct {
	pci.Region
	bar int
	h   Hooks
}

func (r *hookedRegion) write(off uint32, v uint64, size int) bool {
	if r.h.Cut != nil && r.h.Cut.Load() {
		return false
	}
	return r.h.Write == nil || r.h.Write(r.bar, off, v, size)
}

func (r *hookedRegion) Read32(off uint32) uint32 {
	v := r.Region.Read32(off)
	if r.h.Read != nil {
		v = r.h.Read(r.bar, off, v)
	}
	return v
}

func (r *hookedRegion) Write32(off, v uint32) {
	if r.write(off, uint64(v), 4) {
		r.Region.Write32(off, v)
	}
}

func (r *hookedRegion) Write64(off uint32, v uint64) {
	if r.write(off, v, 8) {
		r.Region.Write64(off, v)
	}
}

func (r *hookedRegion) Read8(off uint32) uint8   { return r.Region.(narrowRegion).Read8(off) }
func (r *hookedRegion) Read16(off uint32) uint16 { return r.Region.(narrowRegion).Read16(off) }

func (r *hookedRegion) Write8(off uint32, v uint8) {
	if r.write(off, uint64(v), 1) {
		r.Region.(narrowRegion).Write8(off, v)
	}
}

func (r *hookedRegion) Write16(off uint32, v uint16) {
	if r.write(off, uint64(v), 2) {
		r.Region.(narrowRegion).Write16(off, v)
	}
}
