package intel

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// TX descriptor bits (advanced data descriptor cmd_type_len, legacy cmd byte).
const (
	maxTxFrame = 16 * 1024
	minTxFrame = 17 // shorter frames are undefined for the MAC (drivers pad them)
)

// txPartial is a frame being gathered from a TX queue's descriptors (it may span
// doorbells, as on hardware).
type txPartial struct {
	frame []byte
	bad   bool // a descriptor of it faulted
	noFCS bool // its EOP descriptor lacked IFCS
	// tstamp: its first data descriptor asked for the transmit time (timesync.go).
	tstamp bool
}

// transmit processes TX queue q from TDH to TDT and sends the finished frames to the
// wire. Descriptors are processed under the device lock; frames are sent after it is
// released (the peer's receive path takes its own device lock).
func (m *Model) transmit(q int) {
	m.txMu.Lock()
	defer m.txMu.Unlock()
	m.dev.Lock()
	n := m.gather(q)
	m.dev.Unlock()
	if n == 0 {
		return
	}
	m.wireMu.Lock()
	w := m.wire
	m.wireMu.Unlock()
	sent := 0
	for _, f := range m.txOut[:n] {
		if w != nil && w.Send(f) == nil {
			sent++
		}
	}
	m.dev.Lock()
	m.st.WireOut += uint64(sent)
	m.st.WireLost += uint64(n - sent)
	m.dev.Unlock()
}

// transmitAll runs transmit on every queue (after DMATXCTL.TE is set).
func (m *Model) transmitAll() {
	for q := 0; q < m.l.queues; q++ {
		m.transmit(q)
	}
}

// gather walks queue q's descriptors from TDH to TDT: reads buffers, writes back DD
// where RS asks for it, advances TDH, and collects finished frames in m.txOut. It returns
// how many frames are ready to send. The lock is held.
func (m *Model) gather(q int) int {
	l, d := m.l, m.dev
	if m.closing || d.Closed() || q >= l.queues {
		return 0
	}
	m.settle()
	lt := &m.txl[q]
	if !m.txEnabled() || !lt.on {
		return 0
	}
	n := lt.n
	h, t := m.get(l.txq(q, intelnic.QH)), m.get(l.txq(q, intelnic.QT))
	if h == t {
		return 0
	}
	if m.txHung&(1<<q) != 0 {
		return 0 // hung: fetches nothing until the queue is disabled or the device reset
	}
	if m.inj.hangAny > 0 {
		m.inj.hangAny--
		m.txHung |= 1 << q
		m.st.TxHangs++
		return 0
	}
	if !d.BusMaster() {
		m.st.NoBusMaster++
		return 0
	}
	if n == 0 || n%8 != 0 || h >= n || t >= n {
		m.protocol("tx queue %d: ring of %d descriptors with head %d, tail %d", q, n, h, t)
		return 0
	}
	base := lt.base
	p := &m.txq[q]
	out := 0
	completed := false
	wbal := m.get(l.txq(q, intelnic.QWBAL))
	headWB := wbal&intelnic.TdwbalEnable != 0 // replaces descriptor (DD) write-back
	for h != t {
		desc, err := d.DMAAt(base+16*uint64(h), 16, "tx descriptor")
		if err != nil {
			m.st.DMAFaults++
			break // the queue halts on a descriptor it cannot fetch
		}
		addr := binary.LittleEndian.Uint64(desc)
		ctl := binary.LittleEndian.Uint32(desc[8:])
		var length int
		var data, eop, ifcs, rs, legacy bool
		if ctl&intelnic.TxdDEXT != 0 {
			switch ctl >> 20 & 0xF {
			case intelnic.TxdTypeData:
				data, length = true, int(ctl&0xFFFF)
				eop, ifcs, rs = ctl&intelnic.TxdEOP != 0, ctl&intelnic.TxdIFCS != 0, ctl&intelnic.TxdRS != 0
			case intelnic.TxdTypeCtx:
				rs = ctl&intelnic.TxdRS != 0
			default:
				m.protocol("tx queue %d descriptor %d: unknown type %d", q, h, ctl>>20&0xF)
				m.st.TxErrors++
			}
		} else {
			cmd := ctl >> 24
			data, length, legacy = true, int(ctl&0xFFFF), true
			eop, ifcs, rs = cmd&intelnic.LegacyEOP != 0, cmd&intelnic.LegacyIFCS != 0, cmd&intelnic.LegacyRS != 0
		}
		if data && length > 0 {
			if m.inj.txBadDMA.take(q) {
				addr = badDMAAddr
			}
			if len(p.frame)+length > maxTxFrame {
				p.bad = true
			} else if buf, err := d.DMAAt(addr, length, "tx buffer"); err != nil {
				m.st.DMAFaults++
				p.bad = true
			} else {
				p.tstamp = p.tstamp || len(p.frame) == 0 && !legacy && ctl&intelnic.TxdMacTstamp != 0
				p.frame = append(p.frame, buf...)
			}
		}
		if data && eop {
			p.noFCS = !ifcs // IFCS counts on the EOP descriptor, as on 8254x/8257x

			if m.finish(q, p, out) {
				out++
			}
		}
		if rs && !headWB {
			switch {
			case m.inj.wbLost.take(q):
				m.st.TxWritebackLost++
			case m.inj.wbDelay.take(q):
				m.holdWB(q, desc, legacy, wire.Now()+int64(m.inj.wbDelayFor[q]))
			case m.heldWB(q) != 0:
				m.holdWB(q, desc, legacy, m.heldWB(q)) // in order behind the held ones
			default:
				writeTxDD(desc, legacy)
				completed = true
			}
		} else {
			completed = completed || rs
		}
		h = (h + 1) % n
	}
	m.set(l.txq(q, intelnic.QH), h)
	if headWB {
		iova := uint64(m.get(l.txq(q, intelnic.QWBAH)))<<32 | uint64(wbal&^3)
		if b, err := d.DMAAt(iova, 4, "tx head write-back"); err == nil {
			sim.StoreUint32(b, h)
		} else {
			m.st.DMAFaults++
		}
	}
	if completed {
		m.ic.raiseQueue(q, true)
	}
	return out
}

// finish ends the frame gathered in p: a good one is copied to m.txOut[out] and counted;
// it reports whether it was.
func (m *Model) finish(q int, p *txPartial, out int) bool {
	defer func() { p.frame, p.bad, p.noFCS, p.tstamp = p.frame[:0], false, false, false }()
	switch {
	case p.bad || len(p.frame) == 0:
		m.st.TxErrors++
		return false
	case len(p.frame) < minTxFrame:
		m.st.TxRunts++
		m.protocol("tx queue %d: %d-byte frame: the MAC needs at least %d bytes", q, len(p.frame), minTxFrame)
		return false
	case p.noFCS || !m.txCRC():
		m.st.TxNoFCS++ // it would leave with a bad FCS; the peer drops it
		return false
	case !m.link.up:
		m.st.TxLinkDown++
		return false
	}
	if out == len(m.txOut) {
		m.txOut = append(m.txOut, nil)
	}
	f := append(m.txOut[out][:0], p.frame...)
	for len(f) < minFrame && m.txPad() {
		f = append(f, 0)
	}
	m.txOut[out] = f
	n := len(f)
	m.st.TxFrames++
	m.st.TxBytes += uint64(n)
	m.countFrame(true, q, n)
	m.stampTx(p.tstamp)
	return true
}

// writeTxDD stores a TX descriptor's DD write-back.
func writeTxDD(desc []byte, legacy bool) {
	if legacy {
		sim.StoreUint32(desc[12:], sim.LoadUint32(desc[12:])&^0xF|intelnic.TxStatusDD)
	} else {
		sim.StoreUint32(desc[12:], intelnic.TxStatusDD)
	}
}

// writeTDT is the TX tail hook: a tail write before the queue is on does not stand.
func (m *Model) writeTDT(q int, old, _ uint32) { m.guardTail(true, q, old) }

// doorbellTDT is the TX tail doorbell.
func (m *Model) doorbellTDT(q int, _ uint32) { m.transmit(q) }
