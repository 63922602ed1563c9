package virtio

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
)

// NarrowRegion is a pci.Region that also accesses 8- and 16-bit registers with one access
// of that width. The virtio common configuration has 8- and 16-bit fields that a wider
// access does not reach, so the BARs holding the virtio structures must offer it (the vfio
// and uio BAR mappings and the device model do).
type NarrowRegion interface {
	pci.Region
	Read8(off uint32) uint8
	Write8(off uint32, v uint8)
	Read16(off uint32) uint16
	Write16(off uint32, v uint16)
}

// window is one virtio structure inside a BAR.
type window struct {
	r    NarrowRegion
	base uint32
	len  uint32
}

func (w window) r8(off uint32) uint8        { return w.r.Read8(w.base + off) }
func (w window) w8(off uint32, v uint8)     { w.r.Write8(w.base+off, v) }
func (w window) r16(off uint32) uint16      { return w.r.Read16(w.base + off) }
func (w window) w16(off uint32, v uint16)   { w.r.Write16(w.base+off, v) }
func (w window) r32(off uint32) uint32      { return w.r.Read32(w.base + off) }
func (w window) w32(off uint32, v uint32)   { w.r.Write32(w.base+off, v) }
func (w window) w64(off uint32, v uint64)   { w.w32(off, uint32(v)); w.w32(off+4, uint32(v>>32)) }
func (w window) fits(off, size uint32) bool { return uint64(off)+uint64(size) <= uint64(w.len) }

// transport is the mapped modern PCI interface of one device.
type transport struct {
	common, notify, isr, device window
	notifyMult                  uint32
}

// mapWindow maps the BAR a capability names and checks that the structure lies inside it.
func mapWindow(dev pci.Device, c capability, name string, min uint32) (window, error) {
	if c.length < min {
		return window{}, fmt.Errorf("%s configuration: %d bytes, want at least %d", name, c.length, min)
	}
	r, err := dev.Region(c.bar)
	if err != nil {
		return window{}, fmt.Errorf("%s configuration: map BAR%d: %w", name, c.bar, err)
	}
	n, ok := r.(NarrowRegion)
	if !ok {
		return window{}, fmt.Errorf("%s configuration: BAR%d has no 8/16-bit access: %w", name, c.bar, pci.ErrNotSupported)
	}
	if uint64(c.offset)+uint64(c.length) > uint64(r.Len()) {
		return window{}, fmt.Errorf("%s configuration: 0x%x+0x%x beyond the %d-byte BAR%d", name, c.offset, c.length, r.Len(), c.bar)
	}
	return window{r: n, base: c.offset, len: c.length}, nil
}

// newTransport maps the four structures.
func newTransport(dev pci.Device, c capabilities) (*transport, error) {
	t := &transport{notifyMult: c.notifyMult}
	var err error
	if t.common, err = mapWindow(dev, c.common, "common", virtiospec.ComLen); err != nil {
		return nil, err
	}
	if t.notify, err = mapWindow(dev, c.notify, "notify", 2); err != nil {
		return nil, err
	}
	if t.isr, err = mapWindow(dev, c.isr, "isr", 1); err != nil {
		return nil, err
	}
	// What the device configuration must hold depends on the features (readConfig).
	if t.device, err = mapWindow(dev, c.device, "device", 0); err != nil {
		return nil, err
	}
	return t, nil
}

// status reads device_status.
func (t *transport) status() uint8 { return t.common.r8(virtiospec.ComStatus) }

// addStatus sets bits in device_status (the others stay as they are).
func (t *transport) addStatus(bits uint8) { t.common.w8(virtiospec.ComStatus, t.status()|bits) }

// resetTimeout bounds the wait for a reset to complete.
const resetTimeout = time.Second

// reset writes 0 to device_status and waits until it reads back 0: the device then has
// stopped using every queue.
func (t *transport) reset() error {
	t.common.w8(virtiospec.ComStatus, 0)
	deadline := time.Now().Add(resetTimeout)
	for t.status() != 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("reset: device status 0x%02x after %v", t.status(), resetTimeout)
		}
		time.Sleep(10 * time.Microsecond)
	}
	return nil
}

// deviceFeatures reads the 64 feature bits the device offers.
func (t *transport) deviceFeatures() uint64 {
	t.common.w32(virtiospec.ComDevFeatureSel, 0)
	lo := t.common.r32(virtiospec.ComDevFeature)
	t.common.w32(virtiospec.ComDevFeatureSel, 1)
	hi := t.common.r32(virtiospec.ComDevFeature)
	return uint64(hi)<<32 | uint64(lo)
}

// setDriverFeatures writes the feature bits the driver accepts.
func (t *transport) setDriverFeatures(f uint64) {
	t.common.w32(virtiospec.ComDrvFeatureSel, 0)
	t.common.w32(virtiospec.ComDrvFeature, uint32(f))
	t.common.w32(virtiospec.ComDrvFeatureSel, 1)
	t.common.w32(virtiospec.ComDrvFeature, uint32(f>>32))
}

// configReads bounds the tries of a generation-checked device-configuration read.
const configReads = 16

// readDeviceConfig runs read until config_generation is the same before and after it, so
// that a multi-field read is consistent; a generation that changes across every one of
// configReads tries is an error.
func (t *transport) readDeviceConfig(read func()) error {
	for range configReads {
		gen := t.common.r8(virtiospec.ComConfigGen)
		read()
		if t.common.r8(virtiospec.ComConfigGen) == gen {
			return nil
		}
	}
	return fmt.Errorf("device configuration: config_generation changed during each of %d reads (it never settles)", configReads)
}

// notifyQueue writes the queue's index to its notify address.
func (t *transport) notifyQueue(off uint32, index uint16) { t.notify.w16(off, index) }
