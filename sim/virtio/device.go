package virtio

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// device is the model as a pci.Device: the core's DMA, reset and close, BAR4 with the
// virtio structures and configuration space with the virtio capabilities.
type device struct {
	*sim.Device
	m *Model
}

// Region implements pci.Device: BAR4 holds the virtio structures; there is no other BAR
// to map (the MSI-X table is the backend's business).
func (d *device) Region(bar int) (pci.Region, error) {
	if bar != barIndex {
		return nil, fmt.Errorf("sim virtio %s: BAR%d: no such region", d.Addr(), bar)
	}
	return bar4{d.m}, nil
}

// Config implements pci.Device.
func (d *device) Config() pci.ConfigSpace { return configSpace{d.m} }

// IRQs implements pci.Device.
func (d *device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) { return d.m.irqs(kind, n) }

// Capability chain: 0x34 → 0x40 common → 0x50 ISR → 0x60 device → 0x70 MSI-X (the core's)
// → 0x80 notify → end.
const (
	capCommonAt = 0x40
	capISRAt    = 0x50
	capDeviceAt = 0x60
	capMSIXAt   = 0x70
	capNotifyAt = 0x80
	overlayEnd  = 0x94
)

// overlay is what the virtio capabilities put over the core's configuration space.
var overlay = func() (b [overlayEnd]byte) {
	b[pci.CfgCapPointer] = capCommonAt
	put := func(at, next int, typ byte, off, n uint32, capLen byte) {
		b[at], b[at+1], b[at+2] = virtiospec.CapIDVendor, byte(next), capLen
		b[at+virtiospec.CapOffType], b[at+virtiospec.CapOffBAR] = typ, barIndex
		binary.LittleEndian.PutUint32(b[at+virtiospec.CapOffOffset:], off)
		binary.LittleEndian.PutUint32(b[at+virtiospec.CapOffLength:], n)
	}
	put(capCommonAt, capISRAt, virtiospec.CapCommon, commonBase, virtiospec.ComLen, virtiospec.CapLen)
	put(capISRAt, capDeviceAt, virtiospec.CapISR, isrBase, pageLen, virtiospec.CapLen)
	put(capDeviceAt, capMSIXAt, virtiospec.CapDevice, deviceBase, pageLen, virtiospec.CapLen)
	put(capNotifyAt, 0, virtiospec.CapNotify, notifyBase, pageLen, virtiospec.CapNotifyLen)
	binary.LittleEndian.PutUint32(b[capNotifyAt+virtiospec.CapOffMult:], notifyMult)
	b[capMSIXAt+1] = capNotifyAt
	return b
}()

// overlaid reports whether configuration byte off comes from the overlay.
func overlaid(off int64) bool {
	switch {
	case off == pci.CfgCapPointer, off == capMSIXAt+1:
		return true
	case off >= capCommonAt && off < capMSIXAt, off >= capNotifyAt && off < overlayEnd:
		return true
	}
	return false
}

// configSpace is the core's configuration space with the virtio capabilities laid over it
// (read-only).
type configSpace struct{ m *Model }

func (c configSpace) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.m.dev.Config().ReadAt(p, off)
	for i := 0; i < n; i++ {
		if o := off + int64(i); overlaid(o) {
			p[i] = overlay[o]
		}
	}
	return n, err
}

func (c configSpace) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > 4096 {
		return 0, fmt.Errorf("config write of %d bytes at %d: %w", len(p), off, io.ErrShortWrite)
	}
	// Writes to the capabilities are ignored (read-only); the rest goes to the core.
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || overlaid(off+int64(i)) {
			if i > start {
				if _, err := c.m.dev.Config().WriteAt(p[start:i], off+int64(start)); err != nil {
					return start, err
				}
			}
			start = i + 1
		}
	}
	return len(p), nil
}

// bar4 is the virtio structures as a region with 8-, 16-, 32- and 64-bit access.
type bar4 struct{ m *Model }

func (bar4) Len() int { return barSize }

func (r bar4) check(off uint32, size uint32) {
	if off%size != 0 || uint64(off)+uint64(size) > barSize {
		panic(fmt.Sprintf("sim virtio: %d-byte access at 0x%x outside or unaligned in the %d-byte BAR4", size, off, barSize))
	}
}

func (r bar4) Read8(off uint32) uint8   { r.check(off, 1); return uint8(r.m.read(off, 1)) }
func (r bar4) Read16(off uint32) uint16 { r.check(off, 2); return uint16(r.m.read(off, 2)) }
func (r bar4) Read32(off uint32) uint32 { r.check(off, 4); return r.m.read(off, 4) }
func (r bar4) Read64(off uint32) uint64 {
	r.check(off, 8)
	return uint64(r.m.read(off, 4)) | uint64(r.m.read(off+4, 4))<<32
}
func (r bar4) Write8(off uint32, v uint8)   { r.check(off, 1); r.m.write(off, 1, uint32(v)) }
func (r bar4) Write16(off uint32, v uint16) { r.check(off, 2); r.m.write(off, 2, uint32(v)) }
func (r bar4) Write32(off uint32, v uint32) { r.check(off, 4); r.m.write(off, 4, v) }
func (r bar4) Write64(off uint32, v uint64) {
	r.check(off, 8)
	r.m.write(off, 4, uint32(v))
	r.m.write(off+4, 4, uint32(v>>32))
}

// read dispatches a BAR4 read.
func (m *Model) read(off, size uint32) uint32 {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	if d.Closed() {
		d.Fault(sim.Fault{Kind: sim.AccessAfterClose, Addr: uint64(off), Msg: "read"})
		return ^uint32(0)
	}
	switch {
	case off < commonBase+virtiospec.ComLen:
		return m.readCommon(off-commonBase, size)
	case off >= isrBase && off < isrBase+pageLen:
		// Read-to-clear; deasserts INTx.
		v := m.isr
		m.isr = 0
		m.dev.SetINTx(false)
		return uint32(v)
	case off >= deviceBase && off < deviceBase+virtiospec.NetCfgLen:
		return m.readNetConfig(off-deviceBase, size)
	}
	d.Fault(sim.Fault{Kind: sim.UnknownRead, Addr: uint64(off), Msg: fmt.Sprintf("%d bytes", size)})
	return 0
}

// write dispatches a BAR4 write; a notification runs its queue's work after the lock is
// released.
func (m *Model) write(off, size, v uint32) {
	d := m.dev
	d.Lock()
	if d.Closed() {
		d.Fault(sim.Fault{Kind: sim.AccessAfterClose, Addr: uint64(off), Msg: fmt.Sprintf("write 0x%x", v)})
		d.Unlock()
		return
	}
	notified := -1
	switch {
	case off < commonBase+virtiospec.ComLen:
		m.writeCommon(off-commonBase, size, v)
	case off >= notifyBase && off < notifyBase+notifyMult*uint32(m.nq):
		notified = m.notify(off-notifyBase, size, v)
	default:
		d.Fault(sim.Fault{Kind: sim.UnknownWrite, Addr: uint64(off), Msg: fmt.Sprintf("%d bytes, value 0x%x", size, v)})
	}
	d.Unlock()
	if notified >= 0 {
		m.serve(notified)
	}
}
