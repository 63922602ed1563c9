package daemon

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// rateWindow is how long TestKernelPathRate floods each way.
const rateWindow = 2 * time.Second

// TestKernelPathRate measures the kernel path's frame rates (root, not with -short):
// towards the kernel, 64-byte frames for port a's own MAC flood the port (the app hands
// them to the TAP) and it logs the frames per second the TAP wrote to the kernel and how
// many its full ring dropped; from the kernel, an AF_PACKET socket on the TAP floods it
// and it logs the frames per second that left port a. It fails only if nothing flowed.
func TestKernelPathRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	var gen, other wire.Port
	var out atomic.Uint64
	d, ns, macs := pairKernelDaemon(t, "uiodkb0", "{mode: adaptive}", func(name string) {
		var err error
		if gen, err = wire.Open("pair:" + name + "0"); err != nil {
			t.Fatal(err)
		}
		gen.SetHandler(func(f []byte, ts int64) {
			if len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 {
				out.Add(1)
			}
		})
		if other, err = wire.Open("pair:" + name + "1"); err != nil {
			t.Fatal(err)
		}
	})
	defer gen.Close()
	defer other.Close()
	k := d.ports[0].kernel

	// Towards the kernel.
	f := frame(0)
	copy(f, macs[0][:])
	sent := 0
	start := time.Now()
	testutil.Repeat(rateWindow, func(int, time.Duration) bool {
		for range 64 {
			gen.Send(f)
		}
		sent += 64
		return true
	})
	testutil.WaitFor(5*time.Second, func() bool {
		q := queueStats(d, "a/rx0")
		return q.RxPackets == q.ToKernel+q.Drops+q.TxPackets && k.Stats().TxPackets+k.Counters().TxWriteErrors == q.ToKernel
	})
	el := time.Since(start)
	q, st := queueStats(d, "a/rx0"), k.Stats()
	t.Logf("to the kernel: %d frames sent in %v, %d received by port a, %d written to the TAP (%.0f frames/s), %d dropped at its full ring",
		sent, el.Round(time.Millisecond), q.RxPackets, st.TxPackets, float64(st.TxPackets)/el.Seconds(), k.Counters().TxRingFull)
	if st.TxPackets == 0 {
		t.Fatal("nothing reached the kernel")
	}

	// From the kernel.
	var src wire.Port
	if err := testutil.InNetns(ns, func() (err error) { src, err = wire.ListenPacket("uiodkb0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f = frame(0)
	copy(f, []byte{2, 0, 0, 0, 0, 0x0a})
	copy(f[6:], macs[0][:])
	rx0 := k.Stats().RxPackets
	sent = 0
	start = time.Now()
	testutil.Repeat(rateWindow, func(int, time.Duration) bool {
		if src.Send(f) == nil {
			sent++
		}
		return true
	})
	testutil.WaitFor(5*time.Second, func() bool { return out.Load() >= k.Stats().RxPackets-rx0 })
	el = time.Since(start)
	st = k.Stats()
	t.Logf("from the kernel: %d frames sent on the TAP in %v, %d read by the port (%d without a buffer), %d out of port a (%.0f frames/s)",
		sent, el.Round(time.Millisecond), st.RxPackets-rx0, st.RxMissed, out.Load(), float64(out.Load())/el.Seconds())
	if out.Load() == 0 {
		t.Fatal("nothing the kernel sent left port a")
	}
}
