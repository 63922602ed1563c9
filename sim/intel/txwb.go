package intel

import (
	"time"

	"github.com/uiod/uiod/wire"
)

// heldWB is a TX descriptor write-back held back by TxWritebackDelay.
type heldWB struct {
	q      int
	desc   []byte
	legacy bool
	due    int64 // wire time it is written
}

// holdWB queues a DD write-back for wire time due. The lock is held.
func (m *Model) holdWB(q int, desc []byte, legacy bool, due int64) {
	m.txDelayed = append(m.txDelayed, heldWB{q: q, desc: desc, legacy: legacy, due: due})
	m.st.TxWritebackDelayed++
	m.armWB()
}

// heldWB returns the due time of queue q's last held write-back, or 0 if none is held.
func (m *Model) heldWB(q int) int64 {
	for i := len(m.txDelayed) - 1; i >= 0; i-- {
		if m.txDelayed[i].q == q {
			return m.txDelayed[i].due
		}
	}
	return 0
}

// armWB (re)arms the timer for the earliest held write-back. The lock is held.
func (m *Model) armWB() {
	if len(m.txDelayed) == 0 || m.closing {
		return
	}
	first := m.txDelayed[0].due
	for _, w := range m.txDelayed {
		first = min(first, w.due)
	}
	if m.wbTimer != nil {
		m.wbTimer.Stop()
	}
	m.wbTimer = time.AfterFunc(time.Duration(max(first-wire.Now(), 0)), m.flushWB)
}

// flushWB writes back what has come due, in order, and raises the queues' TX causes.
func (m *Model) flushWB() {
	m.dev.Lock()
	defer m.dev.Unlock()
	if m.closing {
		return
	}
	now := wire.Now()
	var raised uint64
	kept := m.txDelayed[:0]
	for _, w := range m.txDelayed {
		if w.due > now {
			kept = append(kept, w)
			continue
		}
		writeTxDD(w.desc, w.legacy)
		raised |= 1 << w.q
	}
	m.txDelayed = kept
	for ; raised != 0; raised &= raised - 1 {
		m.ic.raiseQueue(trailing(raised), true)
	}
	m.armWB()
}

// dropDelayedWB forgets queue q's held write-backs (the queue was disabled: the device
// forgets what it had not written). The lock is held.
func (m *Model) dropDelayedWB(q int) {
	kept := m.txDelayed[:0]
	for _, w := range m.txDelayed {
		if w.q != q {
			kept = append(kept, w)
		}
	}
	m.txDelayed = kept
}

// stopWB stops the write-back timer (reset, close). The lock is held.
func (m *Model) stopWB() {
	if m.wbTimer != nil {
		m.wbTimer.Stop()
		m.wbTimer = nil
	}
	m.txDelayed = m.txDelayed[:0]
}
