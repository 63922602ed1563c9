package virtio

import "encoding/binary"

// control executes every command available on the control queue.
func (m *Model) control(qi int) {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	q := &m.queues[qi]
	for {
		head, ok := m.next(q)
		if !ok {
			m.setAvailEvent(q)
			return
		}
		q.lastAvail++
		var ds [8]desc
		chain, ok := m.chain(q, head, ds[:0])
		if !ok || len(chain) < 2 {
			m.fault("control chain %d: %d descriptors", head, len(chain))
			m.pushUsed(qi, q, uint32(head), 0, false)
			continue
		}
		ack := chain[len(chain)-1]
		if ack.flags&descWrite == 0 || ack.len < 1 {
			m.fault("control chain %d: no writable ack", head)
			m.pushUsed(qi, q, uint32(head), 0, false)
			continue
		}
		var cmd []byte
		good := true
		for _, c := range chain[:len(chain)-1] {
			if c.flags&descWrite != 0 {
				good = false
				break
			}
			b, err := d.DMAAt(c.addr, int(c.len), "control command")
			if err != nil {
				good = false
				break
			}
			cmd = append(cmd, b...)
		}
		status := byte(ctrlErr)
		if good {
			status = m.command(cmd)
		}
		if b, err := d.DMAAt(ack.addr, 1, "control ack"); err == nil {
			b[0] = status
		}
		m.st.CtrlCommands++
		m.pushUsed(qi, q, uint32(head), 1, false)
	}
}

// command runs one control command (class, command, data) and returns the ack.
func (m *Model) command(cmd []byte) byte {
	if len(cmd) < 2 {
		return ctrlErr
	}
	switch {
	case cmd[0] == ctrlClassMQ && cmd[1] == ctrlMQPairsSet:
		if !m.has(featMQ) || len(cmd) < 4 {
			return ctrlErr
		}
		n := int(binary.LittleEndian.Uint16(cmd[2:]))
		if n < 1 || n > m.cfg.MaxPairs {
			return ctrlErr
		}
		m.pairs = n
		return ctrlOK
	}
	return ctrlErr
}
