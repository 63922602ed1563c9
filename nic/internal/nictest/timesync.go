package nictest

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/wire"
)

// Timesync checks a port's IEEE 1588 unit against a model whose device clock is the wire
// clock scaled by TIMINCA (sim/intel): the clock, a marked frame's TX stamp, a PTP Sync
// frame's RX stamp and sequence id, both one-latch rules (a second stamp before the first
// is read is reported lost, never returned), and frames the RX filter must not stamp.
//
// Device times are checked against wire time brackets taken around the event; the
// tolerance covers the 82599's TIMINCA, which the truncated increment makes run 60 ppb
// slow. Nothing depends on how long anything takes.
func Timesync(t *testing.T, drv Driver) {
	peerMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
	tests := []struct {
		name string
		run  func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef)
	}{
		{"clock", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			time.Sleep(2 * time.Millisecond) // a rate error shows in 2 ms
			c.checkNow(t, ts, "device time")
		}},
		{"tx stamp", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			if _, err := ts.TxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Fatalf("nothing sent: %v, want ErrNoTimestamp", err)
			}
			txStamped(t, h, ts, c, peerMAC, 7, "tx stamp")
			if _, err := ts.TxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Errorf("second read: %v, want ErrNoTimestamp (the latch was freed)", err)
			}
			sendPTP(t, h, peerMAC, 8, false) // unmarked: not stamped
			awaitPeer(t, h, 1)
			if _, err := ts.TxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Errorf("unmarked frame: %v, want ErrNoTimestamp", err)
			}
		}},
		{"tx second stamp lost", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			sendPTP(t, h, peerMAC, 1, true)
			sendPTP(t, h, peerMAC, 2, true)
			awaitPeer(t, h, 2)
			if _, err := ts.TxTimestamp(); !errors.Is(err, nic.ErrTimestampLost) {
				t.Fatalf("two marked frames, one latch: %v, want ErrTimestampLost", err)
			}
			if _, err := ts.TxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Errorf("after the lost one: %v, want ErrNoTimestamp", err)
			}
			sendPTP(t, h, peerMAC, 3, true) // the latch works again
			awaitPeer(t, h, 1)
			awaitTx(t, ts)
		}},
		{"rx stamp", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			peerStamped(t, h, ts, c, peerMAC, 0x1234, "rx stamp")
			if _, err := ts.RxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Errorf("second read: %v, want ErrNoTimestamp", err)
			}
		}},
		{"rx second stamp lost", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			peerPTP(t, h, peerMAC, nic.PTPSync, 1)
			peerPTP(t, h, peerMAC, nic.PTPSync, 2)
			b1, b2 := awaitRx(t, h), awaitRx(t, h)
			defer b1.Free()
			defer b2.Free()
			if !b1.RxTimestamped() || b2.RxTimestamped() {
				t.Fatalf("stamped: first %v second %v, want only the first", b1.RxTimestamped(), b2.RxTimestamped())
			}
			if _, err := nic.RxTimestampOf(ts, b2, 2); !errors.Is(err, nic.ErrTimestampLost) {
				t.Errorf("second frame: %v, want ErrTimestampLost", err)
			}
			if _, err := nic.RxTimestampOf(ts, b1, 2); !errors.Is(err, nic.ErrTimestampLost) {
				t.Errorf("first frame's stamp asked for seq 2: %v, want ErrTimestampLost", err)
			}
		}},
		{"rx filter", func(t *testing.T, h *Harness, ts nic.Timesync, c clockRef) {
			peerPTP(t, h, peerMAC, 1, 5) // Delay_Req: not the message type programmed
			h.Send(1)                    // IPv4
			for range 2 {
				b := awaitRx(t, h)
				if b.RxTimestamped() {
					t.Errorf("%d-byte frame stamped", b.Len())
				}
				b.Free()
			}
			if _, err := ts.RxTimestamp(); !errors.Is(err, nic.ErrNoTimestamp) {
				t.Errorf("latch: %v, want ErrNoTimestamp", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(t, drv, nic.Config{Interrupts: nic.IRQNone})
			ts, err := timesyncOf(h.Port)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ts.DeviceTime(); err == nil {
				t.Error("DeviceTime before EnableTimesync: no error")
			}
			if err := ts.EnableTimesync(); err != nil {
				t.Fatal(err)
			}
			tt.run(t, h, ts, refClock(t, ts))
		})
	}
}

// timesyncOf is the 1588 unit of the driver's port behind p.
func timesyncOf(p Port) (nic.Timesync, error) {
	if d := DriverPort(p); d != nil {
		return nic.TimesyncOf(d)
	}
	return nic.TimesyncOf(p)
}

// clockRef is a device time d read between wire times w0 and w1: the device clock has
// an origin of its own (the models, as QEMU, start it at 0 when TIMINCA is written).
type clockRef struct{ d, w0, w1 int64 }

// refClock reads a clockRef.
func refClock(t *testing.T, ts nic.Timesync) clockRef {
	t.Helper()
	w0 := wire.Now()
	d, err := ts.DeviceTime()
	w1 := wire.Now()
	if err != nil {
		t.Fatal(err)
	}
	return clockRef{d, w0, w1}
}

// check checks that device time d, taken between wire times w0 and w1, is where the
// reference puts it: d-c.d within [w0-c.w1, w1-c.w0], give or take the slowest clock's
// drift (the 82599's 60 ppb) and a microsecond of rounding.
func (c clockRef) check(t *testing.T, what string, d, w0, w1 int64) {
	t.Helper()
	lo, hi := w0-c.w1, w1-c.w0
	slack := hi/10_000_000 + 1000
	if got := d - c.d; got < lo-slack || got > hi+slack {
		t.Errorf("%s: %d ns after the reference, want within [%d, %d] by the wire clock", what, got, lo, hi)
	}
}

// checkNow checks the device time read now.
func (c clockRef) checkNow(t *testing.T, ts nic.Timesync, what string) {
	t.Helper()
	r := refClock(t, ts)
	c.check(t, what, r.d, r.w0, r.w1)
}

// sendPTP sends a PTP Sync frame with sequence id seq on TX queue 0, marked for a TX
// stamp if mark.
func sendPTP(t *testing.T, h *Harness, dst net.HardwareAddr, seq uint16, mark bool) {
	t.Helper()
	b := h.Port.RxPool(0).Get()
	b.SetLen(nic.PutPTP(b.Data(), dst, h.Port.MAC(), nic.PTPSync, seq))
	if mark {
		b.MarkTimestamp()
	}
	if h.Port.TxBurst(0, []*nic.Buf{b}) != 1 {
		b.Free()
		t.Fatal("TX ring full")
	}
}

// peerPTP sends a PTP message from the peer to the port.
func peerPTP(t *testing.T, h *Harness, src net.HardwareAddr, msgType uint8, seq uint16) {
	t.Helper()
	f := make([]byte, nic.PTPFrameLen)
	nic.PutPTP(f, h.Port.MAC(), src, msgType, seq)
	if err := h.Peer.Send(f); err != nil {
		t.Fatal(err)
	}
}

// peerStamped has the peer send a PTP Sync with sequence id seq and checks its RX
// stamp against the wire time it was sent at.
func peerStamped(t *testing.T, h *Harness, ts nic.Timesync, c clockRef, src net.HardwareAddr, seq uint16, what string) {
	t.Helper()
	w0 := wire.Now()
	peerPTP(t, h, src, nic.PTPSync, seq)
	w1 := wire.Now()
	b := awaitRx(t, h)
	defer b.Free()
	d, err := nic.RxTimestampOf(ts, b, seq)
	if err != nil {
		t.Fatal(err)
	}
	c.check(t, what, d, w0, w1)
}

// txStamped sends the peer a marked PTP frame with sequence seq and checks the device's
// TX stamp of it against c.
func txStamped(t *testing.T, h *Harness, ts nic.Timesync, c clockRef, dst net.HardwareAddr, seq uint16, what string) {
	t.Helper()
	w0 := wire.Now()
	sendPTP(t, h, dst, seq, true)
	awaitPeer(t, h, 1)
	w1 := wire.Now()
	c.check(t, what, awaitTx(t, ts), w0, w1)
}

// awaitPeer waits until the peer has got n frames.
func awaitPeer(t *testing.T, h *Harness, n int) {
	t.Helper()
	var got int
	testutil.Eventually(t, 5*time.Second, func() bool {
		h.Port.TxBurst(0, nil)
		got += len(h.Received())
		return got >= n
	}, "peer got %d of %d frames", got, n)
}

// awaitTx polls the TX latch until it holds the stamp.
func awaitTx(t *testing.T, ts nic.Timesync) int64 {
	t.Helper()
	var d int64
	var err error
	testutil.Eventually(t, 5*time.Second, func() bool {
		d, err = ts.TxTimestamp()
		return !errors.Is(err, nic.ErrNoTimestamp)
	}, "no TX stamp")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// awaitRx receives one frame from RX queue 0.
func awaitRx(t *testing.T, h *Harness) *nic.Buf {
	t.Helper()
	bufs := make([]*nic.Buf, 1)
	if !testutil.Eventually(t, 5*time.Second, func() bool { return h.Port.RxBurst(0, bufs) == 1 }, "no frame received") {
		t.FailNow()
	}
	return bufs[0]
}
