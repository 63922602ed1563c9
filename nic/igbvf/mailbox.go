package igbvf

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/pci"
)

// errNoAnswer wraps a mailbox wait the PF did not answer in time; errNotTaken, with it,
// a message the PF never took (no PFACK: a PF whose driver is down serves no mailbox),
// and errPFReset a VF reset that found the PF in reset (RSTI held).
var (
	errNoAnswer = errors.New("the PF did not answer")
	errNotTaken = errors.New("the PF took no message")
	errPFReset  = errors.New("the PF is in reset")
)

// mailbox is the VF side of the PF↔VF mailbox (82576 datasheet 7.8.2.9; Linux igbvf
// mbx.c). The read-to-clear bits of V2PMAILBOX (PFSTS, PFACK, RSTD) are kept in a cache
// between reads, so that a read for one bit does not lose another. Everything the PF
// writes is untrusted: replies are checked for the message they answer and the ACK or
// NACK bit, and every wait is bounded by timeout. Not safe for concurrent use: the port
// serialises it.
type mailbox struct {
	bar     pci.Region
	cache   uint32
	timeout time.Duration
	// onMessage sees a PF message that is not the reply being waited for (a control
	// message), read while waiting or before sending.
	onMessage func(w0 uint32)
}

// status reads V2PMAILBOX, adding the read-to-clear bits seen before.
func (b *mailbox) status() uint32 {
	v := b.bar.Read32(i82576.V2PMailbox) | b.cache
	b.cache = v & i82576.MbxR2C
	return v
}

// take reports whether bits were seen (now or in the cache) and clears them from the
// cache.
func (b *mailbox) take(bits uint32) bool {
	v := b.status()
	b.cache &^= bits
	return v&bits != 0
}

// wait polls for a bit until deadline.
func (b *mailbox) wait(bit uint32, what string, deadline time.Time) error {
	sleep := time.Microsecond
	for !b.take(bit) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s within %v: %w", what, b.timeout, errNoAnswer)
		}
		time.Sleep(sleep)
		if sleep < 500*time.Microsecond {
			sleep *= 2
		}
	}
	return nil
}

// lock takes the buffer (VFU), retrying until the timeout.
func (b *mailbox) lock() error {
	deadline := time.Now().Add(b.timeout)
	for {
		b.bar.Write32(i82576.V2PMailbox, i82576.MbxVFU)
		if b.status()&i82576.MbxVFU != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mailbox lock (VFU) within %v: %w", b.timeout, errNoAnswer)
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// pending reads a PF message already waiting (PFSTS) and hands it to onMessage.
func (b *mailbox) pending() error {
	if !b.take(i82576.MbxPFSts) {
		return nil
	}
	w, err := b.readLocked(1)
	if err != nil {
		return err
	}
	if b.onMessage != nil {
		b.onMessage(w[0])
	}
	return nil
}

// send posts msg and waits for the PF to take it (PFACK). A message the PF left
// unread before is served first, and a stale PFACK dropped. A PF message that arrives
// instead of PFACK was written over the request (the 82576 has one buffer for both
// directions, and a PF flushes the VF's pending request when it writes: Linux's
// igb_write_mbx_pf): it is served and the request posted again, until the timeout.
func (b *mailbox) send(msg []uint32) error {
	deadline := time.Now().Add(b.timeout)
	for {
		if err := b.pending(); err != nil {
			return err
		}
		b.take(i82576.MbxPFAck)
		if err := b.lock(); err != nil {
			return err
		}
		for i, w := range msg {
			b.bar.Write32(i82576.VFMbxMem+4*uint32(i), w)
		}
		b.bar.Write32(i82576.V2PMailbox, i82576.MbxReq) // also gives VFU back
		taken, err := b.waitTaken(deadline)
		if err == nil && !taken && time.Now().After(deadline) {
			err = errNoAnswer // the PF wrote over every request
		}
		if err != nil {
			return fmt.Errorf("PF taking message %#x within %v: %w: %w", msg[0], b.timeout, errNotTaken, err)
		}
		if taken {
			return nil
		}
	}
}

// waitTaken polls until the PF takes the posted message (PFACK: true) or writes one of
// its own first (PFSTS without PFACK: false, PFSTS left for pending), until deadline.
func (b *mailbox) waitTaken(deadline time.Time) (bool, error) {
	sleep := time.Microsecond
	for {
		v := b.status()
		switch {
		case v&i82576.MbxPFAck != 0:
			b.cache &^= i82576.MbxPFAck
			return true, nil
		case v&i82576.MbxPFSts != 0:
			return false, nil
		case time.Now().After(deadline):
			return false, errNoAnswer
		}
		time.Sleep(sleep)
		if sleep < 500*time.Microsecond {
			sleep *= 2
		}
	}
}

// readLocked reads n words of the PF's message and acknowledges it.
func (b *mailbox) readLocked(n int) ([]uint32, error) {
	if err := b.lock(); err != nil {
		return nil, err
	}
	w := make([]uint32, n)
	for i := range w {
		w[i] = b.bar.Read32(i82576.VFMbxMem + 4*uint32(i))
	}
	b.bar.Write32(i82576.V2PMailbox, i82576.MbxAck) // also gives VFU back
	return w, nil
}

// call sends msg and returns the PF's n-word reply to it. PF messages that answer
// something else (a control message between) go to onMessage and the wait goes on.
func (b *mailbox) call(msg []uint32, n int) ([]uint32, error) {
	if err := b.send(msg); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(b.timeout)
	for {
		if err := b.wait(i82576.MbxPFSts, fmt.Sprintf("PF reply to message %#x", msg[0]), deadline); err != nil {
			return nil, err
		}
		w, err := b.readLocked(n)
		if err != nil {
			return nil, err
		}
		if w[0]&i82576.MsgTypeMask == msg[0]&i82576.MsgTypeMask && w[0]&(i82576.MsgAck|i82576.MsgNack) != 0 {
			return w, nil
		}
		if b.onMessage != nil {
			b.onMessage(w[0])
		}
	}
}

// request sends msg and reports whether the PF acknowledged it (false: NACK).
func (b *mailbox) request(msg ...uint32) (bool, error) {
	w, err := b.call(msg, 1)
	if err != nil {
		return false, err
	}
	return w[0]&i82576.MsgAck != 0 && w[0]&i82576.MsgNack == 0, nil
}
