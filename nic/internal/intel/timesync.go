package intel

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
)

// etqf1588 is the ETQF filter the 1588 unit uses (Linux: IGB_ETQF_FILTER_1588 and
// IXGBE_ETQF_FILTER_1588, both 3).
const etqf1588 = 3

// errClosed is returned by the Timesync methods of a closed port.
var errClosed = errors.New("port closed")

// Timesync implements nic.Timesync for an ixgbe or igb port on the registers regs. A
// driver holds it in an unexported field, forwards its methods (so that go doc lists
// them) and calls InitTimesync at open.
type Timesync struct {
	p    *Port
	regs intelnic.TimesyncRegs
	// clock gives TIMINCA for a link speed and the shift from SYSTIM to nanoseconds.
	clock func(speedMbps int) (timinca uint32, shift uint)
	// bySpeed: clock's answer depends on the link speed (the 82599's).
	bySpeed bool
	on      bool
	ext     clockExt
	timinca uint32 // TIMINCA as written
	// speed is the link speed TIMINCA was chosen for (0: the link was down);
	// speedAt the host time it was last checked, linkSeen the port's link-change count
	// then.
	speed    int
	speedAt  int64
	linkSeen uint64
	// txSeen is the TX queues' marked-frame count at the last TxTimestamp.
	txSeen uint64
}

// speedCheck is how often DeviceTime reads the link speed of a port whose clock rate
// depends on it, besides after every link change the port's interrupts report.
const speedCheck = 10 * time.Millisecond

// InitTimesync binds t to p's registers; the unit stays off until EnableTimesync.
func InitTimesync(t *Timesync, p *Port, regs intelnic.TimesyncRegs, clock func(speedMbps int) (uint32, uint)) {
	t.p, t.regs, t.clock = p, regs, clock
	a, _ := clock(1000)
	b, _ := clock(10000)
	t.bySpeed = a != b
}

// locked runs f with the registers mapped (statsMu held, as Link does), or returns
// errClosed.
func (t *Timesync) locked(f func() error) error {
	p := t.p
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.closed.Load() {
		return errClosed
	}
	return f()
}

// EnableTimesync implements nic.Timesync: TIMINCA for the link speed, ETQF 3 for
// ethertype 0x88F7 marked IEEE 1588, PTPv2 layer-2 Sync frames stamped on receive,
// marked frames on transmit, and both latches read empty. The 82599's clock rate follows
// the link speed: 10 Gb/s's while the link is down, chosen again whenever it comes up at
// another speed (the clock stays continuous across the change; stamps latched before it
// are discarded). Enabling again keeps the clock continuous too.
func (t *Timesync) EnableTimesync() error {
	return t.locked(func() error {
		r, g := t.p.bar, t.regs
		t.setClock(t.p.ops.Link().SpeedMbps)
		r.Write32(g.ETQF+4*etqf1588, g.EtqfEnable|intelnic.EtqfIEEE1588|intelnic.EtherTypePTP)
		r.Write32(g.RxMsgType, 0) // V2 message id 0: Sync
		r.Write32(g.TSYNCRXCTL, intelnic.TsyncEnable|intelnic.TsyncRxTypeL2V2)
		r.Write32(g.TSYNCTXCTL, intelnic.TsyncEnable)
		t.freeLatches()
		t.on = true
		t.txSeen = t.marked()
		return nil
	})
}

// freeLatches empties both latches of anything stamped before: the RX one frees on the
// RXSTMPH read on the silicon, on the RXSATRH read on QEMU.
func (t *Timesync) freeLatches() {
	r, g := t.p.bar, t.regs
	r.Read32(g.RXSTMPH)
	r.Read32(g.RXSATRH)
	r.Read32(g.TXSTMPH)
}

// setClock programs TIMINCA for link speed speedMbps (0: down) and keeps the clock
// continuous: the time read before a write of a new rate goes on, by the host clock,
// after it.
func (t *Timesync) setClock(speedMbps int) {
	timinca, shift := t.clock(speedMbps)
	if t.ext.set && timinca == t.timinca {
		// The same rate again (EnableTimesync once more): the write moves nothing on the
		// silicon or on QEMU, and the clock keeps its base.
		t.p.bar.Write32(t.regs.TIMINCA, timinca)
		t.speed, t.speedAt, t.linkSeen = speedMbps, hostNow(), t.p.linkCh.Load()
		return
	}
	var before *int64
	var h0 int64
	if t.ext.set {
		h0 = hostNow()
		ns := t.ext.advance(t.systim(), h0)
		before = &ns
	}
	t.p.bar.Write32(t.regs.TIMINCA, timinca)
	t.timinca = timinca
	raw, h1 := t.systim(), hostNow()
	if before != nil {
		*before += h1 - h0
	}
	t.ext.start(raw, h1, shift, before)
	t.speed, t.speedAt, t.linkSeen = speedMbps, h1, t.p.linkCh.Load()
}

// followSpeed re-programs TIMINCA if the link came up at another speed than the one it
// was chosen for: checked after a link change the interrupts counted and, when always
// is set (DeviceTime), every speedCheck. Stamps latched before the change are in the
// old rate's units and are discarded.
func (t *Timesync) followSpeed(always bool) {
	if !t.bySpeed {
		return
	}
	now, lc := hostNow(), t.p.linkCh.Load()
	if lc == t.linkSeen && (!always || now-t.speedAt < int64(speedCheck)) {
		return
	}
	t.speedAt, t.linkSeen = now, lc
	sp := t.p.ops.Link().SpeedMbps
	if sp == 0 || sp == t.speed {
		return
	}
	if a, _ := t.clock(sp); a == t.timinca {
		t.speed = sp // 10 Gb/s after a link that was down: the same rate
		return
	}
	t.setClock(sp)
	t.freeLatches()
	t.txSeen = t.marked()
}

// marked sums the frames the TX queues sent with a timestamp request.
func (t *Timesync) marked() uint64 {
	var n uint64
	for _, q := range t.p.tx {
		n += q.Marked()
	}
	return n
}

// read64 reads a stamp register pair, low first (reading the low half latches the high
// one; reading the high one frees a timestamp latch).
func (t *Timesync) read64(lo, hi uint32) uint64 {
	l := t.p.bar.Read32(lo)
	h := t.p.bar.Read32(hi)
	return uint64(h)<<32 | uint64(l)
}

// systim reads SYSTIM.
func (t *Timesync) systim() uint64 { return t.read64(t.regs.SYSTIML, t.regs.SYSTIMH) }

// stampNs is the time of a latched stamp raw, read now.
func (t *Timesync) stampNs(raw uint64) int64 { return t.ext.ns(raw, hostNow()) }

// DeviceTime implements nic.Timesync: SYSTIM in ns, continuous across its wraps.
func (t *Timesync) DeviceTime() (ns int64, err error) {
	err = t.locked(func() error {
		if !t.on {
			return errOff
		}
		t.followSpeed(true)
		ns = t.ext.advance(t.systim(), hostNow())
		return nil
	})
	return ns, err
}

// errOff is returned before EnableTimesync.
var errOff = errors.New("timesync not enabled")

// TxTimestamp implements nic.Timesync.
func (t *Timesync) TxTimestamp() (ns int64, err error) {
	err = t.locked(func() error {
		if !t.on {
			return errOff
		}
		t.followSpeed(false)
		marked := t.marked()
		pending := marked - t.txSeen
		if t.p.bar.Read32(t.regs.TSYNCTXCTL)&intelnic.TsyncValid == 0 {
			return nic.ErrNoTimestamp
		}
		raw := t.read64(t.regs.TXSTMPL, t.regs.TXSTMPH)
		t.txSeen = marked
		if pending != 1 {
			return fmt.Errorf("%d marked frames since the last read: %w", pending, nic.ErrTimestampLost)
		}
		ns = t.stampNs(raw)
		return nil
	})
	return ns, err
}

// RxTimestamp implements nic.Timesync. The sequence id is RXSATRH bits 31:16, which hold
// the frame's two sequenceId bytes in the order they arrived read as a little-endian
// word (QEMU's igb stores them so, and libmoon byte-swaps RXSATRH >> 16 on real igb and
// ixgbe parts alike): swapped here into the number the frame carries.
//
// The latch is freed by the RXSTMPH read on the silicon but by the RXSATRH read on QEMU,
// so no read order alone keeps the time and the id of one frame: RXSATRL/H are read
// before the time and again after it, and a stamp whose source and sequence id changed
// meanwhile (another frame took the latch) is ErrTimestampLost. On the silicon that can
// discard a good stamp when the next frame arrives within the reads; it never returns
// another frame's.
func (t *Timesync) RxTimestamp() (st nic.RxStamp, err error) {
	err = t.locked(func() error {
		if !t.on {
			return errOff
		}
		t.followSpeed(false)
		r, g := t.p.bar, t.regs
		if r.Read32(g.TSYNCRXCTL)&intelnic.TsyncValid == 0 {
			return nic.ErrNoTimestamp
		}
		l1, h1 := r.Read32(g.RXSATRL), r.Read32(g.RXSATRH)
		raw := t.read64(g.RXSTMPL, g.RXSTMPH)
		l2, h2 := r.Read32(g.RXSATRL), r.Read32(g.RXSATRH)
		if l1 != l2 || h1 != h2 {
			return fmt.Errorf("frame %d's stamp: the latch took frame %d's while it was read: %w",
				bits.ReverseBytes16(uint16(h1>>16)), bits.ReverseBytes16(uint16(h2>>16)), nic.ErrTimestampLost)
		}
		st.SeqID = bits.ReverseBytes16(uint16(h1 >> 16))
		st.Time = t.stampNs(raw)
		return nil
	})
	return st, err
}
