package virtio

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/sim"
)

// queue is the device's state of one split virtqueue. It is guarded by the device lock.
//
// The model reads the available ring's flags and index, and used_event, as aligned 32-bit
// words, and stores the used ring's flags and index, and avail_event, likewise; so the
// driver must map the driver and device areas rounded up to a multiple of 4 bytes (2 bytes
// more than the spec's minimum for used_event and avail_event).
type queue struct {
	size      uint16
	msix      uint16
	enabled   bool
	eventIdx  bool
	desc      uint64
	driver    uint64
	device    uint64
	lastAvail uint16   // next available entry the device will take
	usedIdx   uint16   // the used index the device published
	held      [][]byte // receive queue: frames waiting for a buffer and the notification
	spare     [][]byte // receive queue: buffers of delivered held frames, for reuse
}

// avail loads the available ring's flags and index. ok is false on a DMA fault or without
// bus mastering.
func (m *Model) avail(q *queue) (flags, idx uint16, ok bool) {
	b, err := m.dmaAt(q.driver, 4, "available ring index")
	if err != nil {
		return 0, 0, false
	}
	w := sim.LoadUint32(b)
	flags, idx = uint16(w), uint16(w>>16)
	if q.eventIdx && flags != 0 {
		m.fault("available ring flags 0x%x with EVENT_IDX (must be 0)", flags)
	}
	return flags, idx, true
}

// next takes the head of the next available chain, if the driver published one. The
// entry is read only after the index that covers it.
func (m *Model) next(q *queue) (head uint16, ok bool) {
	_, idx, ok := m.avail(q)
	if !ok || idx == q.lastAvail {
		return 0, false
	}
	if uint16(idx-q.lastAvail) > q.size {
		m.fault("available index %d is %d entries ahead of %d in a ring of %d", idx, idx-q.lastAvail, q.lastAvail, q.size)
		return 0, false
	}
	b, err := m.dmaAt(q.driver+uint64(virtiospec.AvailEntryOff(int(q.lastAvail%q.size))), 2, "available ring entry")
	if err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b), true
}

// desc is one descriptor.
type desc struct {
	addr  uint64
	len   uint32
	flags uint16
	next  uint16
}

// chain reads the descriptor chain starting at head into ds (reused), bounded by the ring
// size; a bad index, a loop or an indirect descriptor (not offered) is a fault.
func (m *Model) chain(q *queue, head uint16, ds []desc) ([]desc, bool) {
	ds = ds[:0]
	i := head
	for {
		if i >= q.size {
			m.fault("descriptor index %d in a ring of %d", i, q.size)
			return ds, false
		}
		if len(ds) == int(q.size) {
			m.fault("descriptor chain from %d loops", head)
			return ds, false
		}
		b, err := m.dmaAt(q.desc+virtiospec.DescLen*uint64(i), virtiospec.DescLen, "descriptor")
		if err != nil {
			return ds, false
		}
		d := desc{
			addr:  binary.LittleEndian.Uint64(b),
			len:   binary.LittleEndian.Uint32(b[8:]),
			flags: binary.LittleEndian.Uint16(b[12:]),
			next:  binary.LittleEndian.Uint16(b[14:]),
		}
		if d.len == 0 {
			// QEMU's virtqueue_map_desc: "zero sized buffers are not allowed", the device
			// is broken (virtio_error).
			m.fault("descriptor %d of chain %d: zero length", i, head)
			m.needsReset()
			return ds, false
		}
		if d.flags&virtiospec.DescIndirect != 0 {
			m.fault("indirect descriptor %d (not offered)", i)
			return ds, false
		}
		ds = append(ds, d)
		if d.flags&virtiospec.DescNext == 0 {
			return ds, true
		}
		i = d.next
	}
}

// chainRead is why readChain stopped early.
type chainRead int

const (
	chainDone     chainRead = iota // every descriptor read
	chainWritable                  // a device-writable descriptor
	chainTooLong                   // more than the limit
	chainDMA                       // a buffer the device cannot reach
)

// readChain appends the buffers of the device-readable descriptors ds to buf, at most
// limit bytes in all; it stops at the first descriptor it cannot take.
func (m *Model) readChain(ds []desc, buf []byte, limit int, what string) ([]byte, chainRead) {
	for _, c := range ds {
		if c.flags&virtiospec.DescWrite != 0 {
			return buf, chainWritable
		}
		if len(buf)+int(c.len) > limit {
			return buf, chainTooLong
		}
		b, err := m.dmaAt(c.addr, int(c.len), what)
		if err != nil {
			return buf, chainDMA
		}
		buf = append(buf, b...)
	}
	return buf, chainDone
}

// pushUsed writes a used entry, then the used index (atomically, after the entry), and
// interrupts the driver if it asked for it. With ahead the index is published without
// the entry (fault injection).
func (m *Model) pushUsed(qi int, q *queue, id, n uint32, ahead bool) {
	if m.broken() {
		return // a broken device completes nothing until it is reset
	}
	if !ahead {
		b, err := m.dmaAt(q.device+uint64(virtiospec.UsedElemOff(int(q.usedIdx%q.size))), virtiospec.UsedElemLen, "used ring entry")
		if err != nil {
			return
		}
		binary.LittleEndian.PutUint32(b, id)
		binary.LittleEndian.PutUint32(b[4:], n)
	}
	w, err := m.dmaAt(q.device, 4, "used ring index")
	if err != nil {
		return
	}
	old := q.usedIdx
	q.usedIdx++
	sim.StoreUint32(w, uint32(q.usedIdx)<<16)
	m.maybeInterrupt(qi, q, old)
}

// maybeInterrupt sends a used-buffer notification if the driver wants one: with EVENT_IDX
// when the used index passed used_event, otherwise unless NO_INTERRUPT is set. The used
// index was stored (a fenced atomic) before used_event or the flags are loaded.
func (m *Model) maybeInterrupt(qi int, q *queue, old uint16) {
	if q.eventIdx {
		b, err := m.dmaAt(q.driver+uint64(virtiospec.UsedEventOff(int(q.size))), 4, "used_event")
		if err != nil {
			return
		}
		if ev := uint16(sim.LoadUint32(b)); !needEvent(ev, q.usedIdx, old) {
			m.st.Suppressed++
			return
		}
	} else if flags, _, ok := m.avail(q); !ok || flags&virtiospec.AvailNoInterrupt != 0 {
		m.st.Suppressed++
		return
	}
	m.interrupt(qi)
}

// interrupt signals queue qi's vector (MSI-X) or raises INTx with the ISR queue bit.
func (m *Model) interrupt(qi int) {
	if m.dev.MSIXEnabled() {
		v := m.queues[qi].msix
		if v == virtiospec.NoVector || !m.dev.FireMSIX(int(v)) {
			m.st.LostInterrupts++
			return
		}
		m.st.Interrupts++
		return
	}
	m.isr |= virtiospec.ISRQueue
	m.dev.SetINTx(true)
	m.st.Interrupts++
}

// setAvailEvent stores avail_event (EVENT_IDX): notify me when you pass this index.
func (m *Model) setAvailEvent(q *queue) {
	if !q.eventIdx {
		return
	}
	if b, err := m.dmaAt(q.device+uint64(virtiospec.AvailEventOff(int(q.size))), 4, "avail_event"); err == nil {
		sim.StoreUint32(b, uint32(q.lastAvail))
	}
}

// needEvent is vring_need_event.
func needEvent(event, new, old uint16) bool { return new-event-1 < new-old }

// notify handles a write to the notify structure and returns the queue to serve, or -1.
func (m *Model) notify(off, size, v uint32) int {
	qi := int(off / notifyMult)
	switch {
	case off%notifyMult != 0 || size != 2:
		m.fault("notify: %d-byte write at 0x%x", size, off)
		return -1
	case m.broken():
		m.st.IgnoredNotify++ // a broken device ignores its queues until the reset
		return -1
	case !m.running():
		m.fault("notify of queue %d before DRIVER_OK (status 0x%02x)", qi, m.status)
		return -1
	case int(v) != qi:
		m.fault("notify at queue %d's address names queue %d", qi, v)
		return -1
	case !m.queues[qi].enabled:
		m.fault("notify of disabled queue %d", qi)
		return -1
	}
	m.st.Notifies++
	return qi
}

// serve does the work a notification asks for: transmit, a control command, or on a
// receive queue the frames held for want of a buffer (QEMU flushes its queued packets
// only on the receive queue's notification).
func (m *Model) serve(qi int) {
	switch {
	case qi == m.nq-1:
		m.control(qi)
	case qi%2 == 1:
		m.transmit(qi)
	default:
		m.flushHeld(qi)
	}
}
