package virtio

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// vq is what every virtqueue has: its ring, its index and where to notify it.
type vq struct {
	ring      *vring
	index     uint16 // virtqueue number
	vector    uint16 // its MSI-X vector, or NoVector
	notifyOff uint32 // offset of its notify address in the notify structure
	t         *transport
	eventIdx  bool
}

// kick notifies the device of new available entries, unless it asked not to be: with
// EVENT_IDX when the index moved from old past avail_event, otherwise when the used ring's
// NO_NOTIFY flag is clear. It runs after publish, whose fenced store orders the index
// before the load of the device's request.
func (q *vq) kick(old uint16) bool {
	r := q.ring
	if q.eventIdx {
		if !needEvent(r.availEvent(), r.availIdx, old) {
			return false
		}
	} else if r.usedFlags()&virtiospec.UsedNoNotify != 0 {
		return false
	}
	q.t.notifyQueue(q.notifyOff, q.index)
	return true
}

// suppress asks the device for no interrupts on this queue: NO_INTERRUPT without
// EVENT_IDX; with it, used_event one behind the last used index the driver saw, which the
// device's next used index can only pass after 65535 more entries.
func (q *vq) suppress(lastUsed uint16) {
	if q.eventIdx {
		q.ring.setUsedEvent(lastUsed - 1)
		return
	}
	q.ring.availFlags |= virtiospec.AvailNoInterrupt
	q.ring.publish()
}

// request asks for an interrupt when the device adds a used entry after lastUsed.
func (q *vq) request(lastUsed uint16) {
	if q.eventIdx {
		q.ring.setUsedEvent(lastUsed)
		return
	}
	q.ring.availFlags &^= virtiospec.AvailNoInterrupt
	q.ring.publish()
}

// newVQ sizes virtqueue index to at most want descriptors (and what the device offers),
// allocates its ring and programs and enables it with MSI-X vector (NoVector for none).
func newVQ(t *transport, dma pci.DMA, index uint16, want int, vector uint16, msix, eventIdx bool) (*vq, error) {
	c := t.common
	c.w16(virtiospec.ComQueueSelect, index)
	max := int(c.r16(virtiospec.ComQueueSize))
	if max == 0 {
		return nil, fmt.Errorf("virtqueue %d: not available", index)
	}
	size := want
	for size > max {
		size /= 2
	}
	if size < 2 || size&(size-1) != 0 {
		return nil, fmt.Errorf("virtqueue %d: device offers %d descriptors, want a power of two ≥ 2", index, max)
	}
	mem, err := dma.Alloc(layoutFor(size).total)
	if err != nil {
		return nil, fmt.Errorf("virtqueue %d: %w", index, err)
	}
	q := &vq{ring: newVring(mem, size), index: index, vector: vector, t: t, eventIdx: eventIdx}
	q.suppress(0)
	if err := q.program(msix); err != nil {
		dma.Free(mem)
		return nil, err
	}
	return q, nil
}

// program tells the device where the queue's ring is, assigns its MSI-X vector and enables
// it. The device must be reset (or fresh) and past FEATURES_OK, and the queue disabled.
func (q *vq) program(msix bool) error {
	t, c, r := q.t, q.t.common, q.ring
	c.w16(virtiospec.ComQueueSelect, q.index)
	if max := int(c.r16(virtiospec.ComQueueSize)); max < r.size() {
		return fmt.Errorf("virtqueue %d: device offers %d descriptors, the ring has %d", q.index, max, r.size())
	}
	if en := c.r16(virtiospec.ComQueueEnable); en != 0 {
		return fmt.Errorf("virtqueue %d: queue_enable reads %d before set-up (want 0 after reset)", q.index, en)
	}
	c.w16(virtiospec.ComQueueSize, uint16(r.size()))
	c.w64(virtiospec.ComQueueDesc, r.descIOVA())
	c.w64(virtiospec.ComQueueDriver, r.availIOVA())
	c.w64(virtiospec.ComQueueDevice, r.usedIOVA())
	if msix {
		c.w16(virtiospec.ComQueueMSIX, q.vector)
		if got := c.r16(virtiospec.ComQueueMSIX); got != q.vector {
			return fmt.Errorf("virtqueue %d: MSI-X vector %d refused (reads 0x%x)", q.index, q.vector, got)
		}
	}
	off := uint32(c.r16(virtiospec.ComQueueNotifyOff)) * t.notifyMult
	if !t.notify.fits(off, 2) {
		return fmt.Errorf("virtqueue %d: notify offset 0x%x outside the %d-byte notify structure", q.index, off, t.notify.len)
	}
	q.notifyOff = off
	c.w16(virtiospec.ComQueueEnable, 1)
	return nil
}

// counters are one queue's statistics, written by the queue's owner and readable from
// any goroutine.
type counters struct {
	packets, bytes, errors nic.Counter
}
