package nic

import (
	"errors"
	"fmt"
)

// Timesync is the IEEE 1588 unit of a port that can timestamp frames on its own clock
// (the 82576's and the 82599's). It is optional: a Port that cannot timestamp does not
// implement it, and TimesyncOf says so with ErrNoTimesync.
//
// The unit has one latch per direction, as the hardware has: the transmit time of one
// marked frame (Buf.MarkTimestamp) and the receive time of one PTPv2 layer-2 Sync frame
// (ethertype 0x88F7, message type 0). While a latch holds a stamp nobody has read, the
// next frame in that direction is not stamped: its stamp is lost. The methods report
// that (ErrTimestampLost) and never return a stamp that belongs to another frame.
//
// Times are the device clock in nanoseconds, with an origin of its own: only differences
// of stamps of one clock, or of clocks whose offset was measured, mean anything. The
// clock is continuous: the drivers extend the hardware's counter across its wraps (the
// 82576's every 2^45 ns, the 82599's every 2^43 ns at 10 Gb/s) and across a change of
// its rate (the 82599's follows the link speed), so a plain subtraction of two times is
// right. Two devices' clocks drift apart (their crystals are each within ±100 ppm).
//
// Threading: EnableTimesync before traffic; TxTimestamp from the goroutine that sends on
// the port, RxTimestamp from the one that receives; DeviceTime from any goroutine.
type Timesync interface {
	// EnableTimesync programs the ethertype filter for 0x88F7, the clock increment for
	// the current link speed and both latches, and empties them.
	EnableTimesync() error
	// DeviceTime reads the device clock (an error once the port is closed).
	DeviceTime() (int64, error)
	// TxTimestamp reads the TX latch: the transmit time of the one frame marked since the
	// last call. ErrNoTimestamp: no marked frame has left yet (call again later);
	// ErrTimestampLost: more than one marked frame was queued since the last call, so the
	// latch held only the first one's stamp (it is discarded, and the latch freed).
	TxTimestamp() (int64, error)
	// RxTimestamp reads (and frees) the RX latch: the receive time and PTP sequence id of
	// the frame RxBurst returned with Buf.RxTimestamped set. ErrNoTimestamp: the latch is
	// empty; ErrTimestampLost: another frame took the latch while it was read (QEMU frees
	// it before the time is read), so the stamp is discarded. RxTimestampOf checks the
	// stamp belongs to a given frame.
	RxTimestamp() (RxStamp, error)
}

// RxStamp is the RX latch's content.
type RxStamp struct {
	Time  int64  // device clock, ns
	SeqID uint16 // sequenceId of the stamped PTP frame
}

// Errors of the Timesync methods.
var (
	ErrNoTimesync    = errors.New("port cannot timestamp frames in hardware")
	ErrNoTimestamp   = errors.New("no timestamp latched")
	ErrTimestampLost = errors.New("timestamp lost: the latch held another frame's")
)

// TimesyncOf returns p's 1588 unit, or ErrNoTimesync naming what p is.
func TimesyncOf(p Port) (Timesync, error) {
	if ts, ok := p.(Timesync); ok {
		return ts, nil
	}
	return nil, fmt.Errorf("%s: %w", Describe(p), ErrNoTimesync)
}

// RxTimestampOf returns the receive time of b, a PTP frame with sequence id seq just
// returned by RxBurst on the port of ts. A frame the NIC did not stamp (the latch was
// full) and a latch holding another frame's stamp are ErrTimestampLost.
func RxTimestampOf(ts Timesync, b *Buf, seq uint16) (int64, error) {
	if !b.RxTimestamped() {
		return 0, fmt.Errorf("frame %d not stamped: %w", seq, ErrTimestampLost)
	}
	st, err := ts.RxTimestamp()
	if err != nil {
		return 0, err
	}
	if st.SeqID != seq {
		return 0, fmt.Errorf("latch holds frame %d, want %d: %w", st.SeqID, seq, ErrTimestampLost)
	}
	return st.Time, nil
}

// Buffer timestamp flags.
const (
	tsTx = 1 << iota // the sender asks for the transmit time
	tsRx             // the NIC latched the receive time
)

// MarkTimestamp asks a Timesync port to latch this frame's transmit time (see
// Timesync.TxTimestamp). Get clears the mark.
func (b *Buf) MarkTimestamp() { b.ts |= tsTx }

// TimestampMarked reports MarkTimestamp, for drivers.
func (b *Buf) TimestampMarked() bool { return b.ts&tsTx != 0 }

// SetRxTimestamped records, for drivers, that the NIC latched this received frame's
// time (the descriptor's timestamp bit). Get clears it.
func (b *Buf) SetRxTimestamped() { b.ts |= tsRx }

// RxTimestamped reports whether the NIC latched this received frame's time in its RX
// latch: false for every frame of a port without Timesync.
func (b *Buf) RxTimestamped() bool { return b.ts&tsRx != 0 }
