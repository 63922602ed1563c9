package nictest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// InterruptsMSIX checks per-queue vectors: none while masked, the pending cause fires on
// unmask where the family keeps it pending (else the re-poll after arming finds the
// frame), each frame fires once unmoderated, none after disable, spurious messages are
// empty wakeups, a storm leaves the port working.
func InterruptsMSIX(t *testing.T, drv Driver) {
	queues := drv.Queues(2)
	h := New(t, drv, nic.Config{RxQueues: queues, TxQueues: 1, Interrupts: nic.IRQMSIX})
	v0, v1 := h.Port.RxVector(0), h.Port.RxVector(queues-1)
	if v0 == nil || v1 == nil || queues > 1 && v0 == v1 {
		t.Fatalf("vectors %v %v: want one per queue", v0, v1)
	}
	testutil.Drain(t, v0)
	testutil.Drain(t, v1)
	h.Send(1)
	if n := testutil.Drain(t, v0) + testutil.Drain(t, v1); n != 0 {
		t.Fatalf("%d interrupts while masked", n)
	}
	h.Port.EnableRxInterrupt(0)
	if drv.Family.ArmFiresPending {
		if n := WaitFired(t, v0); n != 1 {
			t.Fatalf("pending interrupt on unmask: %d, want 1", n)
		}
	}
	if h.Consume(0) != 1 { // the re-poll after arming finds the frame
		t.Fatal("frame before arming not received")
	}
	for i := 0; i < 5; i++ {
		h.Send(1)
		if n := WaitFired(t, v0); n != 1 {
			t.Fatalf("frame %d: %d interrupts, want 1", i, n)
		}
		if h.Consume(0) != 1 {
			t.Fatalf("frame %d not received", i)
		}
	}
	if queues > 1 && testutil.Drain(t, v1) != 0 {
		t.Fatal("queue 1's vector fired for queue 0's frames")
	}
	h.Port.DisableRxInterrupt(0)
	h.Send(2)
	time.Sleep(time.Millisecond)
	if n := testutil.Drain(t, v0); n != 0 {
		t.Fatalf("%d interrupts after disable", n)
	}
	h.Consume(0)
	inject(h.Model, InterruptStorm, 0, 1)
	if WaitFired(t, v0) != 1 || h.Consume(0) != 0 {
		t.Fatal("spurious interrupt not delivered as an empty wakeup")
	}
	inject(h.Model, InterruptStorm, 0, 1000)
	if testutil.Drain(t, v0) == 0 {
		t.Fatal("storm not delivered")
	}
	h.Send(2)
	if h.Consume(0) != 2 {
		t.Fatal("port stuck after an interrupt storm")
	}
	if queues == 1 {
		return
	}
	// Many flows reach both queues; each queue's own vector fires.
	h.Port.EnableRxInterrupt(0)
	h.Port.EnableRxInterrupt(1)
	rng := rand.New(rand.NewPCG(41, 42))
	for i := 0; i < 64; i++ {
		src := [4]byte{10, 1, byte(i), byte(rng.IntN(256))}
		h.Peer.Send(Frame(rng, Broadcast, src, [4]byte{10, 0, 0, 1}, uint16(rng.IntN(65536)), 80, 64))
	}
	for q, v := range []*irq.Vector{v0, v1} {
		if n := h.Consume(q); n == 0 {
			t.Errorf("queue %d received nothing from 64 flows", q)
		} else if WaitFired(t, v) == 0 {
			t.Errorf("queue %d received %d frames, its vector never fired", q, n)
		}
	}
}

// InterruptsINTx checks the legacy line: none while masked, each armed frame fires once,
// arming (acknowledge + re-arm) never leaves the line stuck, and a frame that arrived
// before arming is found by the poll after arming.
func InterruptsINTx(t *testing.T, drv Driver) {
	if drv.Family.NoINTx {
		t.Skip("the function has no INTx")
	}
	h := New(t, drv, nic.Config{Interrupts: nic.IRQINTx})
	v := h.Port.RxVector(0)
	if v == nil || v.Kind != irq.INTx {
		t.Fatalf("vector %+v, want intx", v)
	}
	testutil.Drain(t, v)
	h.Send(1)
	time.Sleep(time.Millisecond)
	if n := testutil.Drain(t, v); n != 0 {
		t.Fatalf("%d interrupts while masked", n)
	}
	h.Consume(0)
	for i := 0; i < 5; i++ {
		h.Port.EnableRxInterrupt(0)
		h.Send(1)
		if n := WaitFired(t, v); n != 1 {
			t.Fatalf("frame %d: %d interrupts, want 1", i, n)
		}
		h.Port.DisableRxInterrupt(0)
		if h.Consume(0) != 1 {
			t.Fatalf("frame %d not received", i)
		}
	}
	h.Send(1)
	h.Port.EnableRxInterrupt(0)
	if h.Consume(0) != 1 {
		t.Fatal("frame before arming lost")
	}
	time.Sleep(time.Millisecond)
	testutil.Drain(t, v)
	h.Port.EnableRxInterrupt(0)
	h.Send(1)
	if n := WaitFired(t, v); n != 1 {
		t.Fatalf("after re-arm: %d interrupts, want 1", n)
	}
}

// Moderation checks EITR (Intel only): with a 1 ms interval a stream of frames raises at most one
// interrupt per interval (plus the first); without moderation every frame raises one.
func Moderation(t *testing.T, drv Driver) {
	const frames = 200
	for _, itr := range []time.Duration{0, time.Millisecond} {
		h := New(t, drv, nic.Config{Interrupts: nic.IRQMSIX, ITR: itr})
		v := h.Port.RxVector(0)
		testutil.Drain(t, v)
		h.Port.EnableRxInterrupt(0)
		start := time.Now()
		for i := 0; i < frames; i++ {
			h.Send(1)
			if i%20 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		elapsed := time.Since(start)
		time.Sleep(3 * time.Millisecond) // let a throttled interrupt go out
		fired := testutil.Drain(t, v)
		if itr == 0 {
			if fired != frames {
				t.Errorf("no moderation: %d interrupts for %d frames", fired, frames)
			}
		} else if max := uint64(elapsed/itr) + 2; fired == 0 || fired > max {
			t.Errorf("itr %v: %d interrupts in %v, want 1..%d", itr, fired, elapsed, max)
		}
		h.Consume(0)
	}
}

// LinkChange checks that link-status-change interrupts reach the driver: by their MSI-X
// vector while the queues sleep, and on the shared INTx line through the read of the
// interrupt cause in EnableRxInterrupt.
func LinkChange(t *testing.T, drv Driver) {
	t.Run("msix", func(t *testing.T) {
		h := New(t, drv, nic.Config{Interrupts: nic.IRQMSIX})
		h.Model.SetLink(false)
		if !testutil.WaitFor(time.Second, func() bool { return h.Port.LinkChanges() > 0 }) {
			t.Fatal("link change interrupt not handled")
		}
		if h.Port.Link().Up {
			t.Fatal("link up after the cable went down")
		}
		h.Model.SetLink(true)
		if !testutil.WaitFor(time.Second, func() bool { return h.Port.LinkChanges() >= 2 && h.Port.Link().Up }) {
			t.Fatalf("link up not seen: %d changes, %+v", h.Port.LinkChanges(), h.Port.Link())
		}
	})
	t.Run("intx", func(t *testing.T) {
		if drv.Family.NoINTx {
			t.Skip("the function has no INTx")
		}
		h := New(t, drv, nic.Config{Interrupts: nic.IRQINTx})
		v := h.Port.RxVector(0)
		h.Port.EnableRxInterrupt(0) // acknowledges what the bring-up left
		testutil.Drain(t, v)        // and re-arms the line
		before := h.Port.LinkChanges()
		h.Model.SetLink(false)
		if WaitFired(t, v) != 1 {
			t.Fatal("link change raised no INTx")
		}
		h.Port.EnableRxInterrupt(0) // reads the interrupt cause
		if h.Port.LinkChanges() != before+1 || h.Port.Link().Up {
			t.Fatalf("%d changes, link %+v; want %d, down", h.Port.LinkChanges(), h.Port.Link(), before+1)
		}
	})
}
