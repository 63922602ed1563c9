package intel

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
)

// etqf1588 is the ETQF filter the 1588 unit uses (Linux: IGB_ETQF_FILTER_1588 and
// IXGBE_ETQF_FILTER_1588, both 3).
const etqf1588 = 3

// errClosed is returned by the Timesync methods of a closed port.
var errClosed = errors.New("port closed")

// Timesync implements nic.Timesync for an ixgbe or igb port on the registers regs. A
// driver embeds it and calls InitTimesync at open.
type Timesync struct {
	p    *Port
	regs intelnic.TimesyncRegs
	// clock gives TIMINCA for a link speed and the shift from SYSTIM to nanoseconds.
	clock func(speedMbps int) (timinca uint32, shift uint)
	shift uint
	on    bool
	// txSeen is the TX queues' marked-frame count at the last TxTimestamp.
	txSeen uint64
}

// InitTimesync binds t to p's registers; the unit stays off until EnableTimesync.
func InitTimesync(t *Timesync, p *Port, regs intelnic.TimesyncRegs, clock func(speedMbps int) (uint32, uint)) {
	t.p, t.regs, t.clock = p, regs, clock
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
// the link speed at this call (10 Gb/s's while the link is down): enable with the link
// up, and again after it changed speed.
func (t *Timesync) EnableTimesync() error {
	return t.locked(func() error {
		r, g := t.p.bar, t.regs
		timinca, shift := t.clock(t.p.ops.Link().SpeedMbps)
		r.Write32(g.TIMINCA, timinca)
		r.Write32(g.ETQF+4*etqf1588, g.EtqfEnable|intelnic.EtqfIEEE1588|intelnic.EtherTypePTP)
		r.Write32(g.RxMsgType, 0) // V2 message id 0: Sync
		r.Write32(g.TSYNCRXCTL, intelnic.TsyncEnable|intelnic.TsyncRxTypeL2V2)
		r.Write32(g.TSYNCTXCTL, intelnic.TsyncEnable)
		r.Read32(g.RXSTMPH) // free both latches of anything stamped before
		r.Read32(g.TXSTMPH)
		t.shift, t.on = shift, true
		t.txSeen = t.marked()
		return nil
	})
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
func (t *Timesync) read64(lo, hi uint32) int64 {
	l := t.p.bar.Read32(lo)
	h := t.p.bar.Read32(hi)
	return int64((uint64(h)<<32 | uint64(l)) >> t.shift)
}

// DeviceTime implements nic.Timesync.
func (t *Timesync) DeviceTime() (ns int64, err error) {
	err = t.locked(func() error {
		if !t.on {
			return errOff
		}
		ns = t.read64(t.regs.SYSTIML, t.regs.SYSTIMH)
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
		marked := t.marked()
		pending := marked - t.txSeen
		if t.p.bar.Read32(t.regs.TSYNCTXCTL)&intelnic.TsyncValid == 0 {
			return nic.ErrNoTimestamp
		}
		ns = t.read64(t.regs.TXSTMPL, t.regs.TXSTMPH)
		t.txSeen = marked
		if pending != 1 {
			ns = 0
			return fmt.Errorf("%d marked frames since the last read: %w", pending, nic.ErrTimestampLost)
		}
		return nil
	})
	return ns, err
}

// RxTimestamp implements nic.Timesync. The sequence id is RXSATRH bits 31:16, which hold
// the frame's two sequenceId bytes in the order they arrived read as a little-endian
// word (QEMU's igb stores them so; the datasheets do not give the byte order): swapped
// here into the number the frame carries.
func (t *Timesync) RxTimestamp() (st nic.RxStamp, err error) {
	err = t.locked(func() error {
		if !t.on {
			return errOff
		}
		if t.p.bar.Read32(t.regs.TSYNCRXCTL)&intelnic.TsyncValid == 0 {
			return nic.ErrNoTimestamp
		}
		st.SeqID = bits.ReverseBytes16(uint16(t.p.bar.Read32(t.regs.RXSATRH) >> 16))
		st.Time = t.read64(t.regs.RXSTMPL, t.regs.RXSTMPH)
		return nil
	})
	return st, err
}
