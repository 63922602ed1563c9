package nictest

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// tsRegs are the 1588 registers of an Intel model's flavour and SYSTIM's shift at the
// model's 10 Gb/s (82599).
func tsRegs(h *Harness) (intelnic.TimesyncRegs, uint) {
	if h.Intel().Flavor() == intel.X82576 {
		return i82576.Timesync, i82576.TimincaShift
	}
	_, shift := i82599.TimincaFor(10000)
	return i82599.Timesync, shift
}

// TimesyncRxRace checks that a PTP Sync arriving while the driver reads the RX latch
// never gets its time returned for the frame before it, whichever read frees the latch
// (RXSTMPH on the silicon, RXSATRH on QEMU: the family's Quirks.RxLatchFreedBySATRH). A
// hook sends the second frame at the driver's first RXSATRH read: on the QEMU rule it
// takes the latch before the driver reads the time; the stamp of the first frame is then
// ErrTimestampLost, never the second frame's time.
func TimesyncRxRace(t *testing.T, drv Driver) {
	peerMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x98}
	var armed atomic.Bool
	var satrh atomic.Uint32
	var hp atomic.Pointer[Harness]
	var w2 atomic.Int64 // wire time just before the hook sent frame 2
	hooked := drv
	hooked.Open = func(dev pci.Device, cfg nic.Config) (Port, error) {
		return drv.Open(Hooked(dev, Hooks{Read: func(bar int, off, v uint32) uint32 {
			if bar == 0 && off == satrh.Load() && armed.CompareAndSwap(true, false) {
				h := hp.Load()
				w2.Store(wire.Now())
				f := make([]byte, nic.PTPFrameLen)
				nic.PutPTP(f, h.Port.MAC(), peerMAC, nic.PTPSync, 2)
				h.Peer.Send(f) // the model takes it at once, if the latch is free
			}
			return v
		}}), cfg)
	}
	h := New(t, hooked, nic.Config{Interrupts: nic.IRQNone})
	hp.Store(h)
	regs, _ := tsRegs(h)
	satrh.Store(regs.RXSATRH)
	ts, err := timesyncOf(h.Port)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.EnableTimesync(); err != nil {
		t.Fatal(err)
	}
	c := refClock(t, ts)
	w0 := wire.Now()
	peerPTP(t, h, peerMAC, nic.PTPSync, 1)
	w1 := wire.Now()
	b1 := awaitRx(t, h)
	defer b1.Free()
	time.Sleep(2 * time.Millisecond) // frame 2's time is then 2 ms past frame 1's bracket
	armed.Store(true)
	d, err := nic.RxTimestampOf(ts, b1, 1)
	if armed.Load() {
		t.Fatal("the driver never read RXSATRH")
	}
	b2 := awaitRx(t, h)
	defer b2.Free()
	switch {
	case errors.Is(err, nic.ErrTimestampLost):
		t.Logf("frame 1's stamp discarded: %v", err)
	case err != nil:
		t.Fatalf("frame 1: %v", err)
	default:
		c.check(t, "frame 1's rx stamp", d, w0, w1)
	}
	// Frame 2's stamp, if the latch still holds one, is its own.
	if d2, err := nic.RxTimestampOf(ts, b2, 2); err == nil {
		c.check(t, "frame 2's rx stamp", d2, w2.Load(), wire.Now())
	}
}

// TimesyncWrap checks the device clock across SYSTIM's wrap at 2^64 (2^45 ns on the
// 82576, 2^43 ns on the 82599 at 10 Gb/s): TIMADJ puts SYSTIM 20 ms before it, and the
// device time, a TX stamp taken before the wrap and an RX stamp taken after it stay on
// one continuous clock.
func TimesyncWrap(t *testing.T, drv Driver) {
	const before = 20 * time.Millisecond
	h := New(t, drv, nic.Config{Interrupts: nic.IRQNone})
	regs, shift := tsRegs(h)
	ts, err := timesyncOf(h.Port)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.EnableTimesync(); err != nil {
		t.Fatal(err)
	}
	bar, err := h.Model.PCI().Region(0)
	if err != nil {
		t.Fatal(err)
	}
	// Add 2^64 − SYSTIM − 20 ms as two adjustments under 2^63, which the silicon's
	// sign-and-magnitude TIMADJ and QEMU's two's complement read alike.
	s := uint64(bar.Read32(regs.SYSTIML))
	s |= uint64(bar.Read32(regs.SYSTIMH)) << 32
	adjust := func(v uint64) {
		bar.Write32(regs.TIMADJL, uint32(v))
		bar.Write32(regs.TIMADJH, uint32(v>>32))
	}
	adjust(1<<63 - 1)
	adjust(1<<63 + 1 - s - uint64(before)<<shift)
	c := refClock(t, ts)
	peerMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x97}
	txStamped(t, h, ts, c, peerMAC, 1, "tx stamp before the wrap")
	time.Sleep(2 * before)
	peerStamped(t, h, ts, c, peerMAC, 2, "rx stamp after the wrap")
	c.checkNow(t, ts, "device time after the wrap")
	if raw := uint64(bar.Read32(regs.SYSTIML)) | uint64(bar.Read32(regs.SYSTIMH))<<32; raw >= 1<<63 {
		t.Fatalf("SYSTIM %#x: the clock has not wrapped", raw)
	}
}
