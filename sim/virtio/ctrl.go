package virtio

import (
	"encoding/binary"
	"math"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

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
		if ack.flags&virtiospec.DescWrite == 0 || ack.len < 1 {
			m.fault("control chain %d: no writable ack", head)
			m.pushUsed(qi, q, uint32(head), 0, false)
			continue
		}
		cmd, read := m.readChain(chain[:len(chain)-1], nil, math.MaxInt, "control command")
		status := byte(virtiospec.CtrlErr)
		switch {
		case read == chainDone && m.inj.ctrlErr > 0:
			m.inj.ctrlErr--
		case read == chainDone:
			status = m.command(cmd)
		}
		if b, err := m.dmaAt(ack.addr, 1, "control ack"); err == nil {
			b[0] = status
		}
		m.st.CtrlCommands++
		m.pushUsed(qi, q, uint32(head), 1, false)
	}
}

// command runs one control command (class, command, data) and returns the ack.
func (m *Model) command(cmd []byte) byte {
	if len(cmd) < 2 {
		return virtiospec.CtrlErr
	}
	switch {
	case cmd[0] == virtiospec.CtrlClassMQ && cmd[1] == virtiospec.CtrlMQPairsSet:
		if !m.has(virtiospec.FeatMQ) || len(cmd) < 4 {
			return virtiospec.CtrlErr
		}
		n := int(binary.LittleEndian.Uint16(cmd[2:]))
		if n < 1 || n > m.cfg.MaxPairs {
			return virtiospec.CtrlErr
		}
		m.pairs = n
		return virtiospec.CtrlOK
	case cmd[0] == virtiospec.CtrlClassRX:
		return m.rxMode(cmd[1], cmd[2:])
	case cmd[0] == virtiospec.CtrlClassMAC:
		return m.macCommand(cmd[1], cmd[2:])
	}
	return virtiospec.CtrlErr
}
