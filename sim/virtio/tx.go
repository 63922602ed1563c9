package virtio

import "github.com/uiod/uiod/internal/hw/virtiospec"

// maxTxFrame bounds a gathered frame (header included).
const maxTxFrame = 65562

// transmit sends every frame the driver made available on transmit queue qi. Each frame is
// gathered under the device lock and sent with it released.
func (m *Model) transmit(qi int) {
	m.txMu[qi].Lock()
	defer m.txMu[qi].Unlock()
	if m.txBuf[qi] == nil {
		m.txBuf[qi] = make([]byte, 0, maxTxFrame)
	}
	for {
		frame, ok := m.gather(qi)
		if !ok {
			return
		}
		if frame == nil {
			continue // a bad chain, already counted
		}
		m.send(frame)
	}
}

// gather takes the next available transmit chain into the queue's buffer and returns the
// frame (nil for a chain that could not be sent), or ok false when none is left.
func (m *Model) gather(qi int) (frame []byte, ok bool) {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	q := &m.queues[qi]
	if !m.running() || !q.enabled {
		return nil, false
	}
	head, ok := m.next(q)
	if !ok {
		m.setAvailEvent(q)
		// Re-check after publishing avail_event: a chain made available before the driver
		// could see it must not wait for a notification that will not come.
		if head, ok = m.next(q); !ok {
			return nil, false
		}
	}
	q.lastAvail++
	var ds [16]desc
	chain, good := m.chain(q, head, ds[:0])
	buf := m.txBuf[qi][:0]
	if good {
		var read chainRead
		buf, read = m.readChain(chain, buf, maxTxFrame, "transmit buffer")
		switch read {
		case chainWritable:
			m.fault("transmit chain %d: device-writable descriptor", head)
		case chainTooLong:
			m.fault("transmit chain %d: more than %d bytes", head, maxTxFrame)
		}
		good = read == chainDone
	}
	if good && len(buf) < virtiospec.NetHdrLen {
		m.fault("transmit chain %d: %d bytes, shorter than the header", head, len(buf))
		good = false
	}
	m.pushUsed(qi, q, uint32(head), 0, false)
	if !good {
		m.st.TxErrors++
		return nil, true
	}
	m.txBuf[qi] = buf
	frame = buf[virtiospec.NetHdrLen:]
	if !m.link {
		m.st.TxLinkDown++
		return nil, true
	}
	m.st.TxFrames++
	m.st.TxBytes += uint64(len(frame))
	return frame, true
}

// send puts a frame on the wire. The lock is not held.
func (m *Model) send(frame []byte) {
	if m.wire == nil || m.wire.Send(frame) != nil {
		m.dev.Lock()
		m.st.WireLost++
		m.dev.Unlock()
		return
	}
	m.dev.Lock()
	m.st.WireOut++
	m.dev.Unlock()
}
