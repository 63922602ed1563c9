package intel

import (
	"encoding/binary"
	"math/bits"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// The IEEE 1588 unit, as QEMU's igb implements the 82576's (hw/net/igb_core.c,
// e1000x_timestamp) and the 82599 datasheet describes its own:
//
//   - SYSTIM is the wire clock (wire.Now, one clock for every model in the process, as
//     QEMU's virtual clock is for every igb of a VM) scaled by TIMINCA: it advances by
//     TIMINCA's value every period of cycles of the MAC clock (16 ns on the 82576; on the
//     82599 6.4 ns at 10 Gb/s and 64 ns at 1 Gb/s, so that its rate follows the link
//     speed, changing when the link comes up at another speed and kept while it is
//     down), plus what TIMADJ added. Reading SYSTIML latches SYSTIMH. The register is 64
//     bits and wraps at 2^64.
//   - TIMINCA and TIMADJ as on the silicon: a TIMINCA write keeps the clock continuous,
//     and a TIMADJH write adds TIMADJH:TIMADJL, bit 63 the sign of the magnitude in bits
//     62:0. With Quirks.QEMUClockRegs, as QEMU's e1000x_set_timinca and igb_set_timadjh
//     instead: a TIMINCA write adds (new − old)·t/16 (t the wire time, in the scaled
//     units), so that the first one jumps SYSTIM to about twice the scaled time, and
//     TIMADJ is a two's-complement add.
//   - TX: a frame whose first data descriptor has TSTAMP, sent while TSYNCTXCTL is
//     enabled and not VALID, latches TXSTMP and sets VALID; reading TXSTMPH clears it.
//   - RX: a frame whose ethertype matches an enabled ETQF marked 1588, received while
//     TSYNCRXCTL is enabled and not VALID, carrying a PTPv2 header (version 2) whose first
//     byte equals TSYNCRXCFG/RXMTRL bits 15:8, latches RXSTMP at its arrival time,
//     RXSATRL/H (source id, sequence id in 31:16 as QEMU stores it: the two bytes read
//     little-endian; with Quirks.PTPSeqLate two bytes late, as QEMU reads them) and
//     VALID, and its last descriptor gets the TS status bit. Reading RXSTMPH clears
//     VALID (the silicon's rule); with Quirks.RxLatchFreedBySATRH reading RXSATRH does
//     instead (QEMU's). Later frames are not stamped until then.
//
// A device reset leaves the TIMADJ sum and the 82599's clock period alone.

// tsUnit is the state of the 1588 unit that no register holds.
type tsUnit struct {
	timadj int64 // SYSTIM's offset from the scaled clock: TIMADJ writes, TIMINCA changes
	// cyclePs is the 82599's MAC clock period for the speed its link last came up at (0:
	// 10 Gb/s's, which it has at power-on).
	cyclePs uint64
}

// typTS marks, in the packet-type word receive passes to place, a frame the RX latch
// stamped; place turns it into the TS status bit. The bit is never written to a
// descriptor's packet-type field.
const typTS = 1 << 31

// tsRegs returns the flavour's 1588 registers.
func (m *Model) tsRegs() []sim.Reg {
	g := m.tsLayout()
	ro := func(name string, off uint32, read func(int, uint32) uint32) sim.Reg {
		return sim.Reg{Name: name, Off: off, Access: sim.RO, Read: read}
	}
	return []sim.Reg{
		{Name: "TSYNCRXCTL", Off: g.TSYNCRXCTL, Access: sim.RW, Mask: intelnic.TsyncEnable | intelnic.TsyncRxTypeMask},
		{Name: "TSYNCTXCTL", Off: g.TSYNCTXCTL, Access: sim.RW, Mask: intelnic.TsyncEnable},
		rw("TSYNCRXCFG", g.RxMsgType, 1, 0, 0),
		rw("ETQF", g.ETQF, 8, 4, 0),
		ro("RXSTMPL", g.RXSTMPL, nil),
		ro("RXSTMPH", g.RXSTMPH, func(_ int, v uint32) uint32 {
			if !m.cfg.Quirks.RxLatchFreedBySATRH {
				m.tsFree(g.TSYNCRXCTL)
			}
			return v
		}),
		ro("RXSATRL", g.RXSATRL, nil),
		ro("RXSATRH", g.RXSATRH, func(_ int, v uint32) uint32 {
			if m.cfg.Quirks.RxLatchFreedBySATRH {
				m.tsFree(g.TSYNCRXCTL)
			}
			return v
		}),
		ro("TXSTMPL", g.TXSTMPL, nil),
		ro("TXSTMPH", g.TXSTMPH, func(_ int, v uint32) uint32 { m.tsFree(g.TSYNCTXCTL); return v }),
		ro("SYSTIML", g.SYSTIML, func(_ int, _ uint32) uint32 {
			t := m.systim(wire.Now())
			m.set(g.SYSTIMH, uint32(t>>32))
			return uint32(t)
		}),
		ro("SYSTIMH", g.SYSTIMH, nil),
		{Name: "TIMINCA", Off: g.TIMINCA, Access: sim.RW, Write: m.writeTIMINCA},
		rw("TIMADJL", g.TIMADJL, 1, 0, 0),
		{Name: "TIMADJH", Off: g.TIMADJH, Access: sim.RW, Write: m.writeTIMADJH},
	}
}

// tsLayout is the flavour's 1588 register offsets.
func (m *Model) tsLayout() *intelnic.TimesyncRegs {
	if m.cfg.Flavor == X82576 {
		return &i82576.Timesync
	}
	return &i82599.Timesync
}

// tsFree clears a latch's VALID bit (its stamp was read).
func (m *Model) tsFree(ctl uint32) { m.set(ctl, m.get(ctl)&^intelnic.TsyncValid) }

// cyclePs is the period of the clock SYSTIM counts: 16 ns on the 82576, the 82599's
// MAC clock at the speed its link last came up at.
func (m *Model) cyclePs() uint64 {
	switch {
	case m.cfg.Flavor == X82576:
		return 16000
	case m.ts.cyclePs == 0:
		return cycle10G
	}
	return m.ts.cyclePs
}

// The 82599's MAC clock period by link speed (Linux ixgbe_ptp.c: IXGBE_INCVAL_10GB,
// _1GB, _100 are 6.4 ns, 64 ns and 640 ns in their shifts' units).
const (
	cycle10G = 6400
	cycle1G  = 64000
)

// tsLinkUp sets the 82599's MAC clock period for the link speed LINKS reports as the
// link comes up, keeping SYSTIM continuous. The lock is held.
func (m *Model) tsLinkUp() {
	if m.cfg.Flavor != X82599 {
		return
	}
	ps := uint64(cycle10G)
	if m.linksSpeed() == i82599.LinksSpeed1G {
		ps = cycle1G
	}
	if ps == m.cyclePs() {
		return
	}
	now, tim := wire.Now(), m.get(m.tsLayout().TIMINCA)
	before := m.scaled(now, tim)
	m.ts.cyclePs = ps
	m.ts.timadj += int64(before - m.scaled(now, tim))
}

// scaled is wire time ns in units of TIMINCA timinca: ns / (period·cycle) · value,
// wrapping at 64 bits as the register does.
func (m *Model) scaled(ns int64, timinca uint32) uint64 {
	inc, per := incPeriod(timinca)
	return mulDiv(uint64(ns)*1000, inc, per*m.cyclePs())
}

// incPeriod is TIMINCA's increment value and period (a period of 0 counts as 1, as
// QEMU takes it).
func incPeriod(timinca uint32) (inc, per uint64) {
	return uint64(timinca & intelnic.TimincaValueMask), max(uint64(timinca>>intelnic.TimincaPeriodShift), 1)
}

// mulDiv is a·b/div in 128 bits, wrapping at 64.
func mulDiv(a, b, div uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi%div, lo, div)
	return q
}

// systim is SYSTIM at wire time now.
func (m *Model) systim(now int64) uint64 {
	return uint64(m.ts.timadj) + m.scaled(now, m.get(m.tsLayout().TIMINCA))
}

// writeTIMINCA keeps SYSTIM continuous across an increment change, or with
// QEMUClockRegs adds what QEMU's e1000x_set_timinca does.
func (m *Model) writeTIMINCA(_ int, old, v uint32) {
	now := wire.Now()
	if !m.cfg.Quirks.QEMUClockRegs {
		m.ts.timadj += int64(m.scaled(now, old) - m.scaled(now, v))
		return
	}
	// QEMU: timadj += (muldiv64(ns, inc, per) − muldiv64(ns, oldinc, oldper)) / 16, with
	// its 16 ns cycle; the 82599's cycle in picoseconds where it is not whole ns.
	t, unit := uint64(now), m.cyclePs()
	if unit%1000 == 0 {
		unit /= 1000
	} else {
		t *= 1000
	}
	m.ts.timadj += (int64(muldiv(t, v)) - int64(muldiv(t, old))) / int64(unit)
}

// muldiv is t·value/period of TIMINCA timinca (QEMU's muldiv64).
func muldiv(t uint64, timinca uint32) uint64 {
	inc, per := incPeriod(timinca)
	return mulDiv(t, inc, per)
}

// writeTIMADJH adds TIMADJH:TIMADJL to SYSTIM: bit 63 the sign of the magnitude in
// bits 62:0 (the silicon; MoonGen's libmoon writes it so), or with QEMUClockRegs as a
// two's-complement number (QEMU's igb_set_timadjh).
func (m *Model) writeTIMADJH(_ int, _, v uint32) {
	adj := uint64(m.get(m.tsLayout().TIMADJL)) | uint64(v)<<32
	if m.cfg.Quirks.QEMUClockRegs {
		m.ts.timadj += int64(adj)
		return
	}
	mag := int64(adj &^ (1 << 63))
	if adj>>63 != 0 {
		mag = -mag
	}
	m.ts.timadj += mag
}

// tsLatch stores SYSTIM at now in a stamp register pair and sets ctl's VALID, if ctl is
// enabled and not VALID; it reports whether it did.
func (m *Model) tsLatch(ctl, lo, hi uint32, now int64) bool {
	c := m.get(ctl)
	if c&intelnic.TsyncEnable == 0 || c&intelnic.TsyncValid != 0 {
		return false
	}
	t := m.systim(now)
	m.set(lo, uint32(t))
	m.set(hi, uint32(t>>32))
	m.set(ctl, c|intelnic.TsyncValid)
	return true
}

// stampTx latches the transmit time of a frame sent with TSTAMP on its first descriptor.
func (m *Model) stampTx(tstamp bool) {
	if tstamp {
		g := m.tsLayout()
		m.tsLatch(g.TSYNCTXCTL, g.TXSTMPL, g.TXSTMPH, wire.Now())
	}
}

// ptpHeader is the part of a PTPv2 header the RX latch reads: up to the sequenceId and
// the two bytes after it (PTPSeqLate).
const ptpHeader = 36

// stampRx latches the receive time ts of frame if the 1588 filter takes it, and returns
// typTS if it did (0 otherwise).
func (m *Model) stampRx(frame []byte, ts int64) uint32 {
	if len(frame) < 14+ptpHeader {
		return 0
	}
	g := m.tsLayout()
	etype := uint32(binary.BigEndian.Uint16(frame[12:]))
	matched := false
	for i := uint32(0); i < 8; i++ {
		f := m.get(g.ETQF + 4*i)
		if f&g.EtqfEnable != 0 && f&intelnic.EtqfEtypeMask == etype {
			matched = f&intelnic.EtqfIEEE1588 != 0
			break
		}
	}
	ptp := frame[14:]
	if !matched || ptp[1]&0xF != 2 || uint32(ptp[0]) != m.get(g.RxMsgType)>>8&0xFF {
		return 0
	}
	if !m.tsLatch(g.TSYNCRXCTL, g.RXSTMPL, g.RXSTMPH, ts) {
		return 0
	}
	at := 22 // sourcePortIdentity's bytes 2-7, then the sequenceId at 30
	if m.cfg.Quirks.PTPSeqLate {
		at = 24
	}
	m.set(g.RXSATRL, binary.LittleEndian.Uint32(ptp[at:]))
	m.set(g.RXSATRH, uint32(binary.LittleEndian.Uint16(ptp[at+4:]))|uint32(binary.LittleEndian.Uint16(ptp[at+8:]))<<16)
	return typTS
}

// splitTS takes the typTS mark out of a packet-type word and returns the status bit it
// stands for.
func splitTS(typ uint32) (uint32, uint32) {
	return typ &^ typTS, typ >> 31 * intelnic.RxStatusTS
}
