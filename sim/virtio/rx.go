package virtio

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// receive is the wire handler: one frame into the next available buffer of the queue
// pair the frame steers to.
func (m *Model) receive(frame []byte, _ int64) {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	m.st.WireIn++
	if m.inj.drop > 0 {
		m.inj.drop--
		m.st.Dropped++
		return
	}
	if !m.running() || !m.link || !d.BusMaster() {
		m.st.RxOff++
		return
	}
	if !m.accepts(frame) {
		m.st.Filtered++ // not for the device's addresses
		return
	}
	if len(frame) > m.longest(frame) {
		m.st.Oversize++ // beyond the MTU: not the device's to deliver
		return
	}
	pair := 0
	if m.pairs > 1 {
		pair = m.cfg.Steer(frame, m.pairs) % m.pairs
	}
	qi := 2 * pair
	q := &m.queues[qi]
	if !q.enabled {
		m.st.RxOff++
		return
	}
	if len(q.held) > 0 || !m.deliver(qi, q, frame) {
		m.hold(q, frame) // behind the frames already held, as QEMU's net queue keeps order
	}
}

// maxHeld bounds the frames a receive queue holds for want of buffers; more are missed.
const maxHeld = 256

// hold keeps a frame until the driver notifies the queue. The lock is held.
func (m *Model) hold(q *queue, frame []byte) {
	if len(q.held) >= maxHeld {
		m.st.Missed++
		return
	}
	var b []byte
	if n := len(q.spare); n > 0 {
		b, q.spare = q.spare[n-1][:0], q.spare[:n-1]
	}
	q.held = append(q.held, append(b, frame...))
	m.st.Held++
}

// flushHeld delivers the frames receive queue qi holds, in order, while it has buffers:
// the work of the driver's notification.
func (m *Model) flushHeld(qi int) {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	q := &m.queues[qi]
	if !m.running() || !m.link || !d.BusMaster() || !q.enabled {
		return
	}
	k := 0
	for k < len(q.held) && m.deliver(qi, q, q.held[k]) {
		q.spare = append(q.spare, q.held[k])
		k++
	}
	n := copy(q.held, q.held[k:])
	clear(q.held[n:])
	q.held = q.held[:n]
}

// deliver writes one frame into the next available buffer of receive queue qi. It returns
// false, the frame untaken, when the ring has no buffer: the device has then asked to be
// notified (avail_event) and checked the ring once more, as QEMU's virtio_net_has_buffers
// does. The lock is held.
func (m *Model) deliver(qi int, q *queue, frame []byte) bool {
	head, ok := m.next(q)
	if !ok {
		m.setAvailEvent(q)
		if head, ok = m.next(q); !ok {
			return false
		}
	}
	var ds [16]desc
	chain, ok := m.chain(q, head, ds[:0])
	if !ok {
		m.st.RxErrors++
		q.lastAvail++ // the chain is unusable: consume it
		m.pushUsed(qi, q, uint32(head), 0, false)
		return true
	}
	capacity := 0
	for _, c := range chain {
		if c.flags&virtiospec.DescWrite == 0 {
			m.fault("receive chain %d: device-readable descriptor", head)
			m.st.RxErrors++
			q.lastAvail++
			m.pushUsed(qi, q, uint32(head), 0, false)
			return true
		}
		capacity += int(c.len)
	}
	if virtiospec.NetHdrLen+len(frame) > capacity {
		// Left available for a frame that fits, as QEMU does. Every frame that gets
		// here is within the MTU the driver negotiated, which promised buffers for it.
		m.fault("receive chain %d: %d bytes, too small for the header and a frame of %d bytes within mtu %d", head, capacity, len(frame), m.mtu())
		m.st.Oversize++
		return true
	}
	var hdr [virtiospec.NetHdrLen]byte
	binary.LittleEndian.PutUint16(hdr[10:], 1) // num_buffers
	if !m.scatter(chain, hdr[:], frame) {
		m.st.RxErrors++ // a DMA fault (recorded): hand the chain back empty
		q.lastAvail++
		m.pushUsed(qi, q, uint32(head), 0, false)
		return true
	}
	q.lastAvail++
	m.setAvailEvent(q)
	id, n := uint32(head), uint32(virtiospec.NetHdrLen+len(frame))
	ahead := false
	switch {
	case m.inj.badID > 0:
		m.inj.badID--
		id = uint32(q.size) + 3
	case m.inj.oversize > 0:
		m.inj.oversize--
		n = uint32(capacity) + 64
	case m.inj.ahead > 0:
		m.inj.ahead--
		ahead = true
	case m.inj.jump > 0:
		q.usedIdx += m.inj.jump
		m.inj.jump = 0
	}
	m.st.RxFrames++
	m.st.RxBytes += uint64(len(frame))
	m.pushUsed(qi, q, id, n, ahead)
	return true
}

// mtu is the MTU the device delivers frames of: its mtu field with VIRTIO_NET_F_MTU
// negotiated, else the standard 1500 (a driver's buffers then need hold only 1526 bytes
// with the header, the spec says). The lock is held.
func (m *Model) mtu() int {
	if m.has(virtiospec.FeatMTU) {
		return m.cfg.MTU
	}
	return 1500
}

// longest is the longest frame like f the device delivers: a frame of its MTU, with the
// Ethernet header and, when f is VLAN-tagged, the tag. The lock is held.
func (m *Model) longest(f []byte) int {
	n := m.mtu() + 14
	if len(f) >= 14 && (f[12] == 0x81 && f[13] == 0x00 || f[12] == 0x88 && f[13] == 0xa8) {
		n += 4
	}
	return n
}

// scatter writes hdr then frame over the chain's buffers.
func (m *Model) scatter(chain []desc, hdr, frame []byte) bool {
	src := [2][]byte{hdr, frame}
	s := 0
	for _, c := range chain {
		room := int(c.len)
		off := 0
		for room > 0 && s < 2 {
			if len(src[s]) == 0 {
				s++
				continue
			}
			n := min(room, len(src[s]))
			b, err := m.dmaAt(c.addr+uint64(off), n, "receive buffer")
			if err != nil {
				return false
			}
			copy(b, src[s][:n])
			src[s] = src[s][n:]
			off += n
			room -= n
		}
		if s == 2 {
			break
		}
	}
	return true
}

// steerByFlow hashes IPv4 addresses and UDP/TCP ports over pairs; other frames go to
// pair 0.
func steerByFlow(f []byte, pairs int) int {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return 0
	}
	ip := f[14:]
	ihl := int(ip[0]&0xf) * 4
	h := uint32(2166136261)
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	mix(ip[12:20])
	if (ip[9] == 6 || ip[9] == 17) && len(ip) >= ihl+4 {
		mix(ip[ihl : ihl+4])
	}
	return int(h % uint32(pairs))
}
