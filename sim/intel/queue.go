package intel

import (
	"math/bits"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/wire"
)

// ringLatch is what a queue took from its registers when it was enabled: the hardware
// latches the ring's base, length and (RX) buffer layout at enable, so writes to those
// registers while the queue is on change nothing. Guarded by the device lock.
type ringLatch struct {
	on     bool
	base   uint64
	n      uint32 // descriptors
	srrctl uint32 // RX only
}

func trailing(v uint64) int { return bits.TrailingZeros64(v) }

// latch returns queue q's latch.
func (m *Model) latch(tx bool, q int) *ringLatch {
	if tx {
		return &m.txl[q]
	}
	return &m.rxl[q]
}

// qreg returns the offset of register reg in queue q's block.
func (m *Model) qreg(tx bool, q int, reg uint32) uint32 {
	if tx {
		return m.l.txq(q, reg)
	}
	return m.l.rxq(q, reg)
}

// engaged reports whether queue q is on or an enable/disable of it is under way.
func (m *Model) engaged(tx bool, q int) bool {
	pend := m.async.rxPend
	if tx {
		pend = m.async.txPend
	}
	return m.latch(tx, q).on || pend&(1<<q) != 0
}

// writeDCTL is the RXDCTL/TXDCTL hook: the ENABLE bit keeps reading its old value until
// the enable or disable completes (Timing.QueueEnable later).
func (m *Model) writeDCTL(tx bool, q int, old, v uint32) {
	off := m.qreg(tx, q, intelnic.QDCTL)
	m.set(off, v&^intelnic.DctlEnable|old&intelnic.DctlEnable)
	want := v&intelnic.DctlEnable != 0
	if want && m.cfg.Flavor == X82599 && !m.dmaDone {
		m.protocol("%s queue %d: enabled before RDRXCTL.DMAIDONE reads 1 (ignored)", dirName(tx), q)
		return
	}
	if want && tx && m.cfg.Flavor == X82599 && m.get(i82599.DMATXCTL)&1 == 0 {
		// Linux ixgbe_configure_tx: "DMATXCTL.EN must be before Tx queues are enabled".
		m.protocol("tx queue %d: enabled before DMATXCTL.TE (ignored)", q)
		return
	}
	a := &m.async
	pend, wantBits, atq := &a.rxPend, &a.rxWant, &a.rxAt
	if tx {
		pend, wantBits, atq = &a.txPend, &a.txWant, &a.txAt
	}
	bit := uint64(1) << q
	if want == m.latch(tx, q).on {
		*pend &^= bit // back to where it is: nothing to do
		return
	}
	d := m.timing.QueueEnable
	if d <= 0 {
		*pend &^= bit
		m.applyQueue(tx, q, want)
		return
	}
	*pend |= bit
	if want {
		*wantBits |= bit
	} else {
		*wantBits &^= bit
	}
	atq[q] = wire.Now() + int64(d)
	a.pending = true
}

// applyQueue completes an enable (latching the ring) or disable of queue q. The lock is
// held.
func (m *Model) applyQueue(tx bool, q int, on bool) {
	off := m.qreg(tx, q, intelnic.QDCTL)
	lt := m.latch(tx, q)
	if !on {
		*lt = ringLatch{}
		m.set(off, m.get(off)&^intelnic.DctlEnable)
		if tx {
			m.txHung &^= 1 << q
			m.dropDelayedWB(q)
		}
		return
	}
	*lt = ringLatch{
		on:   true,
		base: uint64(m.get(m.qreg(tx, q, intelnic.QBAH)))<<32 | uint64(m.get(m.qreg(tx, q, intelnic.QBAL))&^0x7F),
		n:    m.get(m.qreg(tx, q, intelnic.QLEN)) / 16,
	}
	if !tx {
		lt.srrctl = m.get(m.l.srrctl(q))
	}
	m.set(off, m.get(off)|intelnic.DctlEnable)
	if !tx {
		m.drainFIFO()
	}
}

// latchedReg returns the Write hook of a ring register the queue latches at enable: a
// write while the queue is engaged is ignored (the old value stays) and is a protocol
// fault when it would have changed the value.
func (m *Model) latchedReg(tx bool, name string, reg func(q int) uint32) func(q int, old, v uint32) {
	return func(q int, old, _ uint32) {
		m.guardLatched(tx, q, name, reg(q), old)
	}
}

func (m *Model) guardLatched(tx bool, q int, name string, off, old uint32) {
	if !m.engaged(tx, q) {
		return
	}
	if nv := m.get(off); nv != old {
		m.set(off, old)
		m.protocol("%s queue %d: %s written (0x%x) while the queue is enabled (ignored)", dirName(tx), q, name, nv)
	}
}

// guardTail makes a tail write before the queue's ENABLE reads 1 have no effect (a
// protocol fault when it would have moved the tail), and reports whether the write
// stands. Zeroing the tail of a queue that is off is ring re-initialisation, which the
// references do before every enable, and stands.
func (m *Model) guardTail(tx bool, q int, old uint32) bool {
	if m.latch(tx, q).on {
		return true
	}
	off := m.qreg(tx, q, intelnic.QT)
	if nv := m.get(off); nv != old && (nv != 0 || m.engaged(tx, q)) {
		m.set(off, old)
		m.protocol("%s queue %d: tail written (%d) before the queue's ENABLE reads 1 (ignored)", dirName(tx), q, nv)
	}
	return false
}

func dirName(tx bool) string {
	if tx {
		return "tx"
	}
	return "rx"
}

// resetQueues turns every queue off and forgets their latches; the 82576 comes out of
// reset with queue 0 enabled (its RXDCTL(0)/TXDCTL(0) reset value, as QEMU's igb
// models it), latching the reset values: base 0, length 0. The lock is held.
func (m *Model) resetQueues() {
	m.rxl = [64]ringLatch{}
	m.txl = [64]ringLatch{}
	m.txHung = 0
	m.txDelayed = m.txDelayed[:0]
	if m.cfg.Flavor == X82576 {
		m.set(m.l.rxq(0, intelnic.QDCTL), intelnic.DctlEnable|1<<16)
		m.set(m.l.txq(0, intelnic.QDCTL), intelnic.DctlEnable)
		m.rxl[0] = ringLatch{on: true, srrctl: m.get(m.l.srrctl(0))}
		m.txl[0] = ringLatch{on: true}
	}
}
