package intel

import (
	"math/bits"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/wire"
)

// 82599 EICR causes above the 16 queue-vector bits.
const (
	eicrMiscMask = 0xFFFF0000
)

// intrState is the interrupt engine: per-vector causes and masks (a vector is an IVAR
// allocation: an MSI-X vector, or in legacy mode an EICR bit), the "other" causes (82599:
// EICR bits 16-31; 82576: ICR) with their mask, and EITR throttling per vector (in legacy
// mode EITR(0) throttles the INTx line). Guarded by the device lock.
type intrState struct {
	m        *Model
	vcause   uint64
	vmask    uint64
	misc     uint32
	miscMask uint32
	next     [64]int64 // earliest wire time of the next message per vector
	timers   [64]*time.Timer
	armed    uint64 // vectors with a throttle timer pending

	intxLine  bool        // the INTx level the model drives
	intxNext  int64       // earliest wire time the line may rise again
	intxTimer *time.Timer // pending throttled rise
}

func (ic *intrState) init(m *Model) { ic.m = m }

func (ic *intrState) reset() {
	ic.stopTimers()
	ic.vcause, ic.vmask, ic.misc, ic.miscMask = 0, 0, 0, 0
	ic.next = [64]int64{}
	ic.intxLine, ic.intxNext = false, 0
}

func (ic *intrState) stopTimers() {
	for v, t := range ic.timers {
		if t != nil {
			t.Stop()
			ic.timers[v] = nil
		}
	}
	ic.armed = 0
	if ic.intxTimer != nil {
		ic.intxTimer.Stop()
		ic.intxTimer = nil
	}
}

// msix reports whether the device is in MSI-X mode (GPIE.MSIX_MODE).
func (ic *intrState) msix() bool { return ic.m.get(ic.m.l.gpie)&intelnic.GpieMSIXMode != 0 }

// visible is the mask of vector causes that show in EICR.
func (ic *intrState) visible() uint64 { return 1<<ic.m.l.causeBits - 1 }

// otherVector is the vector the "other" causes are mapped to by IVAR_MISC, or -1.
func (ic *intrState) otherVector() int {
	e := ic.m.get(ic.m.l.ivarMisc) >> 8 & 0xFF
	if e&0x80 == 0 {
		return -1
	}
	return int(e & 0x3F)
}

// queueVector returns the IVAR allocation of queue q's RX or TX cause, or -1.
func (ic *intrState) queueVector(q int, tx bool) int {
	off, shift := ic.m.l.ivarEntry(q, tx)
	e := ic.m.get(off) >> shift & 0xFF
	if e&0x80 == 0 {
		return -1
	}
	v := int(e & 0x3F)
	if v >= ic.m.l.vectors {
		return -1
	}
	return v
}

// raiseQueue raises queue q's RX or TX cause. The 82576 also raises the legacy cause
// (ICR.RXDW or TXDW), which is what drives INTx there, for a queue whose cause IVAR
// allocates: in every interrupt mode a queue's cause goes through its IVAR entry (82576
// datasheet, IVAR in non-MSI-X mode: the allocation to an EICR bit), and a queue without
// a valid entry raises none (Quirks.RXDWWithoutIVAR: QEMU raises ICR's anyway).
func (ic *intrState) raiseQueue(q int, tx bool) {
	v := ic.queueVector(q, tx)
	if v >= 0 {
		ic.raiseVec(v)
	}
	if ic.m.cfg.Flavor == X82576 && (v >= 0 || ic.m.cfg.Quirks.RXDWWithoutIVAR) {
		if tx {
			ic.raiseMisc(i82576.IcrTXDW)
		} else {
			ic.raiseMisc(i82576.IcrRXDW)
		}
	}
}

// raiseVec sets vector v's cause; a newly raised, unmasked cause is delivered.
func (ic *intrState) raiseVec(v int) {
	bit := uint64(1) << v
	fresh := ic.vcause&bit == 0
	ic.vcause |= bit
	if !ic.msix() {
		ic.updateINTx()
		return
	}
	if fresh && ic.vmask&bit != 0 {
		ic.deliver(v)
	}
}

// raiseMisc sets "other" causes; a newly raised, unmasked one is delivered on the other
// vector.
func (ic *intrState) raiseMisc(causes uint32) {
	fresh := causes &^ ic.misc
	ic.misc |= causes
	if !ic.msix() {
		ic.updateINTx()
		return
	}
	if fresh&ic.miscMask == 0 {
		return
	}
	o := ic.otherVector()
	if o < 0 {
		return
	}
	if ic.m.cfg.Flavor == X82576 {
		ic.raiseVec(o) // the other vector has its own EICR bit
		return
	}
	ic.deliver(o)
}

// pending reports whether vector v has an unmasked cause.
func (ic *intrState) pending(v int) bool {
	if v >= 64 {
		return false
	}
	if ic.vcause&ic.vmask&(1<<v) != 0 {
		return true
	}
	return ic.m.cfg.Flavor == X82599 && ic.misc&ic.miscMask != 0 && v == ic.otherVector()
}

// deliver sends vector v's MSI-X message if it has a pending cause and EITR allows it;
// otherwise it arms a timer for when EITR will allow it.
func (ic *intrState) deliver(v int) {
	m := ic.m
	if m.closing || !ic.pending(v) {
		return
	}
	iv := m.l.eitrNanos(m.get(m.l.eitr(v)))
	now := wire.Now()
	if iv > 0 && now < ic.next[v] {
		m.st.Throttled++
		if ic.armed&(1<<v) == 0 {
			ic.armed |= 1 << v
			ic.timers[v] = time.AfterFunc(time.Duration(ic.next[v]-now), func() { ic.expire(v) })
		}
		return
	}
	if m.dev.FireMSIX(v) {
		m.st.Interrupts++
	} else {
		m.st.LostInterrupts++
	}
	ic.next[v] = now + iv
	bit := uint64(1) << v
	if v < 32 && m.get(m.l.eiac)&uint32(bit) != 0 {
		ic.vcause &^= bit
	}
	if m.get(m.l.gpie)&intelnic.GpieEIAME != 0 && ic.autoMask(v) {
		ic.vmask &^= bit
	}
}

// autoMask reports whether EIAM (or EIAM_EX) auto-masks vector v when it fires.
func (ic *intrState) autoMask(v int) bool {
	m := ic.m
	if v < ic.m.l.causeBits || m.cfg.Flavor == X82576 {
		return m.get(m.l.eiam)&(1<<v) != 0
	}
	return m.get(eiamEx(v/32))&(1<<(v%32)) != 0
}

// expire is a throttle timer: deliver what became pending meanwhile.
func (ic *intrState) expire(v int) {
	m := ic.m
	m.dev.Lock()
	defer m.dev.Unlock()
	if ic.armed&(1<<v) == 0 { // reset or closed meanwhile
		return
	}
	ic.armed &^= 1 << v
	ic.timers[v] = nil
	if m.cfg.Quirks.LateMSIX && !ic.pending(v) {
		// QEMU sends the message it held back even though its cause is gone.
		if m.dev.FireMSIX(v) {
			m.st.Interrupts++
			m.st.LateInterrupts++
		}
		ic.next[v] = wire.Now() + m.l.eitrNanos(m.get(m.l.eitr(v)))
		if v < 32 && m.get(m.l.eiac)&(1<<v) != 0 {
			ic.vcause &^= 1 << v // auto-cleared as for any message sent
		}
		return
	}
	ic.deliver(v)
}

// updateINTx drives the legacy interrupt line: asserted while an enabled cause is set.
// EITR(0) throttles it: the line rises no sooner than one interval after it last rose,
// and a rise held back happens when the interval ends.
func (ic *intrState) updateINTx() {
	m := ic.m
	if ic.msix() {
		ic.intxLine = false
		m.dev.SetINTx(false)
		return
	}
	level := ic.misc&ic.miscMask != 0
	if m.cfg.Flavor == X82599 {
		level = level || ic.vcause&ic.vmask&ic.visible() != 0
	}
	if level && !ic.intxLine {
		now := wire.Now()
		if now < ic.intxNext {
			if ic.intxTimer == nil && !m.closing {
				m.st.Throttled++
				ic.intxTimer = time.AfterFunc(time.Duration(ic.intxNext-now), ic.expireINTx)
			}
			return // held low until the interval ends
		}
		ic.intxNext = now + m.l.eitrNanos(m.get(m.l.eitr(0)))
	}
	ic.intxLine = level
	m.dev.SetINTx(level)
}

// expireINTx ends an EITR interval that held the INTx line low.
func (ic *intrState) expireINTx() {
	m := ic.m
	m.dev.Lock()
	defer m.dev.Unlock()
	if ic.intxTimer == nil || m.closing { // reset or closed meanwhile
		return
	}
	ic.intxTimer = nil
	ic.updateINTx()
}

// setMask enables vectors (EIMS) and "other" causes; pending causes fire at once.
func (ic *intrState) setMask(vecs uint64, misc uint32) {
	freshV := vecs &^ ic.vmask
	freshM := misc &^ ic.miscMask
	ic.vmask |= vecs
	ic.miscMask |= misc
	if !ic.msix() {
		ic.updateINTx()
		return
	}
	for fv := freshV & ic.vcause; fv != 0; fv &= fv - 1 {
		ic.deliver(bits.TrailingZeros64(fv))
	}
	if freshM&ic.misc != 0 {
		if o := ic.otherVector(); o >= 0 {
			if ic.m.cfg.Flavor == X82576 {
				ic.raiseVec(o)
			} else {
				ic.deliver(o)
			}
		}
	}
}

// clearMask disables vectors (EIMC) and "other" causes.
func (ic *intrState) clearMask(vecs uint64, misc uint32) {
	ic.vmask &^= vecs
	ic.miscMask &^= misc
	ic.updateINTx()
}

// eicr is the EICR value as a read sees it.
func (ic *intrState) eicr() uint32 {
	v := uint32(ic.vcause & ic.visible())
	if ic.m.cfg.Flavor == X82599 {
		v |= ic.misc & eicrMiscMask
	} else if !ic.msix() && ic.misc&ic.miscMask != 0 {
		v |= 1 << 31 // 82576 legacy mode: EICR.OTHER mirrors an asserted ICR
	}
	return v
}

// eims is the EIMS value as a read sees it.
func (ic *intrState) eims() uint32 {
	v := uint32(ic.vmask & ic.visible())
	if ic.m.cfg.Flavor == X82599 {
		v |= ic.miscMask & eicrMiscMask
	}
	return v
}

// split divides an EICR-layout value into vector and "other" parts.
func (ic *intrState) split(v uint32) (uint64, uint32) {
	if ic.m.cfg.Flavor == X82599 {
		return uint64(v & 0xFFFF), v & eicrMiscMask
	}
	return uint64(v) & ic.visible(), 0
}

// Register hooks for the interrupt registers.

func (m *Model) readEICR(int, uint32) uint32 {
	ic := &m.ic
	v := ic.eicr()
	if m.cfg.Flavor == X82599 {
		ic.vcause &^= ic.visible()
		if m.get(m.l.gpie)&i82599.GpieOCD == 0 {
			ic.misc = 0 // without GPIE.OCD a read clears the other causes too
		}
	} else {
		ic.vcause &^= ic.visible()
	}
	ic.updateINTx()
	return v
}

func (m *Model) writeEICR(_ int, _, v uint32) {
	vec, misc := m.ic.split(v)
	m.ic.vcause &^= vec
	m.ic.misc &^= misc
	m.ic.updateINTx()
}

func (m *Model) readEICS(int, uint32) uint32 { return m.ic.eicr() }

func (m *Model) writeEICS(_ int, _, v uint32) {
	vec, misc := m.ic.split(v)
	for ; vec != 0; vec &= vec - 1 {
		m.ic.raiseVec(bits.TrailingZeros64(vec))
	}
	if misc != 0 {
		m.ic.raiseMisc(misc)
	}
}

func (m *Model) readEIMS(int, uint32) uint32 { return m.ic.eims() }

func (m *Model) writeEIMS(_ int, _, v uint32) {
	vec, misc := m.ic.split(v)
	m.ic.setMask(vec, misc)
}

func (m *Model) writeEIMC(_ int, _, v uint32) {
	vec, misc := m.ic.split(v)
	m.ic.clearMask(vec, misc)
}

func eiamEx(i int) uint32 { return i82599.EIAMEx0 + 4*uint32(i) }

func (m *Model) writeEICSEx(i int, _, v uint32) {
	for b := uint64(v) << (32 * i); b != 0; b &= b - 1 {
		m.ic.raiseVec(bits.TrailingZeros64(b))
	}
}

func (m *Model) readEIMSEx(i int, _ uint32) uint32 { return uint32(m.ic.vmask >> (32 * i)) }

func (m *Model) writeEIMSEx(i int, _, v uint32) { m.ic.setMask(uint64(v)<<(32*i), 0) }

func (m *Model) writeEIMCEx(i int, _, v uint32) { m.ic.clearMask(uint64(v)<<(32*i), 0) }
