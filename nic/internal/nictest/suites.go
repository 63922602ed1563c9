package nictest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// Open checks a strict init in both interrupt modes: no protocol fault, the model's MAC,
// link up at the model's speed, the queues and vectors asked for.
func Open(t *testing.T, drv Driver) {
	for _, kind := range drv.IRQKinds() {
		t.Run(kind.String(), func(t *testing.T) {
			queues := drv.Queues(2)
			h := New(t, drv, nic.Config{RxQueues: queues, TxQueues: queues, Interrupts: nic.IRQModeOf(kind)})
			if !bytes.Equal(h.Port.MAC(), h.Model.MAC()) {
				t.Errorf("MAC %v, model has %v", h.Port.MAC(), h.Model.MAC())
			}
			if l := h.Port.Link(); !l.Up || l.SpeedMbps != drv.SpeedMbps {
				t.Errorf("link %+v, want up at %d", l, drv.SpeedMbps)
			}
			if got, ok := h.Port.IRQKind(); !ok || got != kind {
				t.Errorf("irq kind %v %v, want %v", got, ok, kind)
			}
			if h.Port.NumRxQueues() != queues || h.Port.NumTxQueues() != queues {
				t.Errorf("queues %d/%d, want %d", h.Port.NumRxQueues(), h.Port.NumTxQueues(), queues)
			}
			if n, ok := h.Model.QueuePairs(); ok && n != queues {
				t.Errorf("model uses %d queue pairs, want %d", n, queues)
			}
			if err := h.Dev.Err(); err != nil {
				t.Fatalf("init: %v", err)
			}
		})
	}
}

// Faults injects every fault the model offers (the shared kinds, then the family's own):
// each must end as a counted error or drop, with no panic, no hang and (checked at close)
// no buffer lost, and the port must work afterwards.
func Faults(t *testing.T, drv Driver) {
	const ring = 64
	posted := drv.Family.Posted(ring)
	fullRx := posted // 100 frames into a full ring: the rest are missed, or held and delivered
	if drv.Family.HoldsWhenFull {
		fullRx = 100
	}
	tests := []FaultCase{
		{
			Name:   "drop",
			Inject: func(h *Harness) { inject(h.Model, DropFrames, 0, 3) },
			Send:   5, WantRx: 2,
			Check: func(t *testing.T, h *Harness) {
				if d := h.Model.Counters().Dropped; d != 3 {
					t.Errorf("model dropped %d, want 3", d)
				}
			},
		},
		{
			Name:   "oversize length",
			Inject: func(h *Harness) { inject(h.Model, OversizeLength, 0, 2) },
			Send:   5, WantRx: 3,
			Check: rxErrors(2),
		},
		{
			Name: "interrupt storm",
			Inject: func(h *Harness) {
				h.Port.EnableRxInterrupt(0)
				inject(h.Model, InterruptStorm, 0, 1000)
				if testutil.Drain(h.T, h.Port.RxVector(0)) == 0 {
					h.T.Error("storm not delivered")
				}
			},
			Send: 2, WantRx: 2,
		},
		{
			Name: "link flap",
			Inject: func(h *Harness) {
				h.Model.FlapLink(5 * time.Millisecond)
				testutil.WaitFor(time.Second, func() bool { return h.Port.LinkChanges() >= 2 && h.Port.Link().Up })
			},
			Send: 3, WantRx: 3,
			Check: func(t *testing.T, h *Harness) {
				if h.Port.LinkChanges() < 2 {
					t.Errorf("%d link changes seen, want 2", h.Port.LinkChanges())
				}
			},
		},
		{
			Name:   "ring full",
			Inject: func(h *Harness) { h.Send(100) },
			Send:   0, WantRx: fullRx,
			Check: func(t *testing.T, h *Harness) {
				lost := uint64(100 - fullRx)
				if m := h.Model.Counters().Missed; m != lost {
					t.Errorf("model missed %d, want %d", m, lost)
				}
				if m := h.Port.Stats().RxMissed; drv.Family.CountsMissed && m != lost {
					t.Errorf("RxMissed %d, want %d", m, lost)
				}
			},
		},
	}
	for _, tt := range append(tests, drv.Family.Faults...) {
		t.Run(tt.Name, func(t *testing.T) {
			h := New(t, drv, nic.Config{RxRing: ring, TxRing: ring, Interrupts: nic.IRQMSIX})
			h.FaultsOK = tt.FaultsOK
			tt.Inject(h)
			h.Send(tt.Send)
			if got := h.Consume(0); got != tt.WantRx {
				t.Errorf("received %d frames, want %d (model %+v, port %+v)", got, tt.WantRx, h.Model.Counters(), h.Port.Stats())
			}
			if tt.Check != nil {
				tt.Check(t, h)
			}
			h.Send(3)
			if got := h.Consume(0); got != 3 {
				t.Errorf("after the fault: received %d of 3", got)
			}
		})
	}
}

// IOMMU corrupts a posted buffer's address in the driver's ring: the model's IOMMU must
// refuse the DMA, the strict model must report it, no frame may come through it, and
// where the device completes the buffer (Family.DMAFaultCompletes) the driver must count
// it and carry on.
func IOMMU(t *testing.T, drv Driver) {
	h := New(t, drv, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone})
	h.FaultsOK = true
	if err := h.Port.SetRxAddr(h.Dev.IOMMU(), 0, 0x7777_0000_0000); err != nil {
		t.Fatal(err)
	}
	h.Send(1)
	if h.Dev.IOMMU().Faults() == 0 {
		t.Fatal("DMA to an unmapped bus address went through")
	}
	faults, _ := h.Dev.Faults()
	var dma bool
	for _, f := range faults {
		dma = dma || f.Kind == sim.DMAFault
	}
	if !dma || h.Dev.Err() == nil {
		t.Fatalf("faults %v, strict error %v: no DMA fault reported", faults, h.Dev.Err())
	}
	if n := h.Consume(0); n != 0 {
		t.Fatalf("received %d frames through a bad descriptor", n)
	}
	if !drv.Family.DMAFaultCompletes {
		if e := h.Port.Stats().RxErrors; e != 0 {
			t.Fatalf("RxErrors %d for a frame the device never completed", e)
		}
		return
	}
	if e := h.Port.Stats().RxErrors; e != 1 {
		t.Fatalf("RxErrors %d, want 1", e)
	}
	h.Send(2)
	if n := h.Consume(0); n != 2 {
		t.Fatalf("after the fault: received %d of 2", n)
	}
}

// MultiQueue checks the device's steering over four queue pairs (Intel: RSS; virtio: the
// device's own): one flow stays on one queue, many flows reach every queue, and every
// transmit queue sends.
func MultiQueue(t *testing.T, drv Driver) {
	const queues = 4
	if drv.Queues(queues) < queues {
		t.Skipf("the driver takes %d queue pair(s)", drv.Queues(queues))
	}
	h := New(t, drv, nic.Config{RxQueues: queues, TxQueues: queues, RxRing: 256, Interrupts: nic.IRQNone})
	rng := rand.New(rand.NewPCG(21, 22))
	counts := func() [queues]int {
		var c [queues]int
		for q := 0; q < queues; q++ {
			c[q] = h.Consume(q)
		}
		return c
	}
	for i := 0; i < 100; i++ {
		h.Peer.Send(Frame(rng, Broadcast, [4]byte{192, 168, 1, 1}, [4]byte{192, 168, 1, 2}, 4000, 53, 80))
	}
	one, used := counts(), 0
	for _, n := range one {
		if n > 0 {
			used++
		}
		if n != 0 && n != 100 {
			t.Fatalf("one flow split over queues: %v", one)
		}
	}
	if used != 1 {
		t.Fatalf("one flow: per-queue counts %v", one)
	}
	for i := 0; i < 400; i++ {
		src := [4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		h.Peer.Send(Frame(rng, Broadcast, src, [4]byte{10, 0, 0, 1}, uint16(rng.IntN(65536)), 80, 80))
	}
	many, total := counts(), 0
	for q, n := range many {
		if n < 400/queues/4 {
			t.Errorf("queue %d got %d of 400 frames: %v", q, n, many)
		}
		total += n
	}
	if total != 400 {
		t.Fatalf("received %d of 400", total)
	}
	var bufs [1]*nic.Buf
	for q := 0; q < queues; q++ {
		h.Send(1)
		got := 0
		for rq := 0; rq < queues && got == 0; rq++ {
			got = h.Port.RxBurst(rq, bufs[:])
		}
		if got != 1 || h.Port.TxBurst(q, bufs[:]) != 1 {
			t.Fatalf("tx queue %d: nothing sent", q)
		}
	}
	if back := h.Received(); len(back) != queues {
		t.Fatalf("peer got %d frames from %d tx queues", len(back), queues)
	}
}

// BufferSizes checks that a port accepts every frame that fits its buffers and the MAC,
// and only those, at the smallest, a jumbo and the largest buffer size (drv.BufSizes):
// the MAC's maximum frame size (82599 MAXFRS, 82576 RLPML) must agree with the buffer
// size the queues have (SRRCTL), stay within the MAC's largest frame (drv.MaxFrame) and
// not overflow its register field; a frame one byte too long is refused, not split.
func BufferSizes(t *testing.T, drv Driver) {
	if drv.MaxMTU > 0 {
		t.Skip("the port's MTU bounds its frames, not its buffers: see MTUs")
	}
	sizes := drv.BufSizes
	if sizes == nil {
		sizes = []int{1024, 9 * 1024, 16 * 1024}
	}
	for _, size := range sizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := New(t, drv, nic.Config{RxRing: 16, TxRing: 16, BufSize: size, Interrupts: nic.IRQNone})
			rng := rand.New(rand.NewPCG(5, uint64(size)))
			big := size
			if drv.Family.LargestFrame != nil {
				big = drv.Family.LargestFrame(size)
			}
			tooLong := size + 1
			if drv.MaxFrame > 0 && drv.MaxFrame < big {
				big, tooLong = drv.MaxFrame, drv.MaxFrame+1
			}
			lengths := []int{60, min(size, 1514), big}
			for _, n := range lengths {
				if err := h.Peer.Send(Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, n)); err != nil {
					t.Fatal(err)
				}
			}
			var wantTooLong uint64
			if size > 1514 {
				wantTooLong = 1
				if err := h.Peer.Send(Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, tooLong)); err != nil {
					t.Fatal(err)
				}
			}
			bufs := make([]*nic.Buf, 8)
			n := h.Port.RxBurst(0, bufs)
			got := make([]int, n)
			for i, b := range bufs[:n] {
				got[i] = b.Len()
				b.Free()
			}
			if fmt.Sprint(got) != fmt.Sprint(lengths) {
				t.Errorf("buffers of %d bytes: received frames of %v bytes, want %v (model %+v)", size, got, lengths, h.Model.Counters())
			}
			if tl := h.Model.Counters().TooLong; tl != wantTooLong {
				t.Errorf("buffers of %d bytes: model refused %d frames as too long, want %d", size, tl, wantTooLong)
			}
			if e := h.Port.Stats().RxErrors; e != 0 {
				t.Errorf("buffers of %d bytes: %d receive errors", size, e)
			}
		})
	}
}
