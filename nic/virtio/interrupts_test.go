package virtio

import (
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestInterruptsMSIX checks per-queue vectors: none while disarmed, each frame fires once
// while armed, none after disarm, spurious notifications are empty wake-ups, and a storm
// leaves the port working.
func TestInterruptsMSIX(t *testing.T) {
	eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
		mc.Steer = bySrcByte2 // h.send's frames to queue 0
		h := newHarness(t, mc, nic.Config{RxQueues: 2, TxQueues: 1, Interrupts: nic.IRQMSIX}, opt)
		v0, v1 := h.port.RxVector(0), h.port.RxVector(1)
		if v0 == nil || v1 == nil || v0 == v1 {
			t.Fatalf("vectors %v %v: want one per queue", v0, v1)
		}
		nictest.Drain(t, v0)
		nictest.Drain(t, v1)
		h.send(1)
		if n := nictest.Drain(t, v0) + nictest.Drain(t, v1); n != 0 {
			t.Fatalf("%d interrupts while disarmed", n)
		}
		h.port.EnableRxInterrupt(0)
		if h.consume(0) != 1 { // the re-poll after arming finds the frame
			t.Fatal("frame before arming not received")
		}
		for i := 0; i < 5; i++ {
			h.send(1)
			if n := nictest.WaitFired(t, v0); n != 1 {
				t.Fatalf("frame %d: %d interrupts, want 1", i, n)
			}
			if h.consume(0) != 1 {
				t.Fatalf("frame %d not received", i)
			}
		}
		if nictest.Drain(t, v1) != 0 {
			t.Fatal("queue 1's vector fired for queue 0's frames")
		}
		h.port.DisableRxInterrupt(0)
		h.send(3)
		if n := nictest.Drain(t, v0); n != 0 {
			t.Fatalf("%d interrupts after disarm", n)
		}
		h.consume(0)
		h.m.SpuriousInterrupt(0)
		if nictest.WaitFired(t, v0) != 1 || h.consume(0) != 0 {
			t.Fatal("spurious notification not delivered as an empty wake-up")
		}
		h.m.InterruptStorm(0, 1000)
		if nictest.Drain(t, v0) == 0 {
			t.Fatal("storm not delivered")
		}
		h.send(2)
		if h.consume(0) != 2 {
			t.Fatal("port stuck after a notification storm")
		}
		// Many flows reach both queues; each queue's own vector fires.
		h.port.EnableRxInterrupt(0)
		h.port.EnableRxInterrupt(1)
		rng := rngFor(42)
		for i := 0; i < 64; i++ {
			src := [4]byte{10, 1, byte(i), byte(rng.IntN(256))}
			h.peer.Send(nictest.Frame(rng, nictest.Broadcast, src, [4]byte{10, 0, 0, 1}, uint16(rng.IntN(65536)), 80, 64))
		}
		for q, v := range []*irq.Vector{v0, v1} {
			if n := h.consume(q); n == 0 {
				t.Errorf("queue %d received nothing from 64 flows", q)
			} else if nictest.WaitFired(t, v) == 0 {
				t.Errorf("queue %d received %d frames, its vector never fired", q, n)
			}
		}
	})
}

// TestInterruptsINTx checks the shared line: none while disarmed, each armed frame fires
// once, the ISR read in EnableRxInterrupt acknowledges the line (no storm), and a frame
// that arrived before arming is found by the poll after arming.
func TestInterruptsINTx(t *testing.T) {
	eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
		h := newHarness(t, mc, nic.Config{Interrupts: nic.IRQINTx}, opt)
		v := h.port.RxVector(0)
		if v == nil || v.Kind != irq.INTx {
			t.Fatalf("vector %+v, want intx", v)
		}
		nictest.Drain(t, v)
		h.send(1)
		if n := nictest.Drain(t, v); n != 0 {
			t.Fatalf("%d interrupts while disarmed", n)
		}
		h.consume(0)
		for i := 0; i < 5; i++ {
			h.port.EnableRxInterrupt(0)
			h.send(1)
			if n := nictest.WaitFired(t, v); n != 1 {
				t.Fatalf("frame %d: %d interrupts, want 1", i, n)
			}
			h.port.DisableRxInterrupt(0)
			if h.consume(0) != 1 {
				t.Fatalf("frame %d not received", i)
			}
		}
		h.send(1)
		h.port.EnableRxInterrupt(0)
		if h.consume(0) != 1 {
			t.Fatal("frame before arming lost")
		}
		nictest.Drain(t, v)
		h.port.EnableRxInterrupt(0)
		h.send(1)
		if n := nictest.WaitFired(t, v); n != 1 {
			t.Fatalf("after re-arm: %d interrupts, want 1", n)
		}
	})
}

// idleQueues is one port's RX queue as an irq.Idler drives it, with the hook the idle
// policy calls between arming and waiting.
type idleQueues struct {
	p       *Port
	got     int
	bufs    [32]*nic.Buf
	onSleep func()
}

func (q *idleQueues) Poll() int {
	n := q.p.RxBurst(0, q.bufs[:])
	for _, b := range q.bufs[:n] {
		b.Free()
	}
	q.got += n
	return n
}
func (q *idleQueues) Arm()    { q.p.EnableRxInterrupt(0) }
func (q *idleQueues) Disarm() { q.p.DisableRxInterrupt(0) }
func (q *idleQueues) BeforeSleep() {
	if q.onSleep != nil {
		q.onSleep()
	}
}

// TestFrameBetweenArmAndWait puts a frame into the window after the adaptive policy armed
// the queue and re-polled, right before it waits: the device's used-buffer notification
// must wake it (a timeout wake-up would mean the frame waited for the full wait_timeout).
func TestFrameBetweenArmAndWait(t *testing.T) {
	for _, kind := range []irq.Kind{irq.MSIX, irq.INTx} {
		t.Run(kind.String(), func(t *testing.T) {
			eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
				h := newHarness(t, mc, nic.Config{Interrupts: nic.IRQModeOf(kind)}, opt)
				q := &idleQueues{p: h.port}
				d, err := idle.New(idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, []*irq.Vector{h.port.RxVector(0)}, q)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				var once sync.Once
				q.onSleep = func() { once.Do(func() { h.send(1) }) }
				d.Empty(idle.Now())
				s := d.Stats()
				if s.Arms != 1 || s.Sleeps != 1 || s.WakeInterrupt != 1 || s.WakeTimeout != 0 {
					t.Fatalf("after a frame in the arm/wait window: %+v; want one sleep woken by interrupt", s)
				}
				if n := q.Poll(); n != 1 {
					t.Fatalf("next poll got %d frames, want 1", n)
				}
			})
		})
	}
}

// TestRepollAfterArm lets a frame land while the queue is disarmed, immediately before
// the policy arms it: no notification comes for it (the used index passed before the
// request), so only the re-poll after arming may find it, without sleeping.
func TestRepollAfterArm(t *testing.T) {
	eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
		h := newHarness(t, mc, nic.Config{Interrupts: nic.IRQMSIX}, opt)
		q := &armHook{idleQueues: idleQueues{p: h.port}}
		q.beforeArm = func() { h.send(1) }
		d, err := idle.New(idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, []*irq.Vector{h.port.RxVector(0)}, q)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		d.Empty(idle.Now())
		s := d.Stats()
		if s.Arms != 1 || s.ArmRaces != 1 || s.Sleeps != 0 || q.got != 1 {
			t.Fatalf("stats %+v, frames %d; want the re-poll to take the frame without sleeping", s, q.got)
		}
	})
}

type armHook struct {
	idleQueues
	beforeArm func()
}

func (q *armHook) Arm() {
	if q.beforeArm != nil {
		q.beforeArm()
		q.beforeArm = nil
	}
	q.idleQueues.Arm()
}

// TestLinkChange checks that configuration-change notifications reach the driver, by
// MSI-X vector or through the ISR read of an INTx arm.
func TestLinkChange(t *testing.T) {
	t.Run("msix", func(t *testing.T) {
		h := newHarness(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQMSIX}, Options{})
		h.m.SetLink(false)
		if !waitFor(func() bool { return h.port.LinkChanges() > 0 }) {
			t.Fatal("configuration change not seen")
		}
		if h.port.Link().Up {
			t.Fatal("link up after the cable went down")
		}
		h.m.SetLink(true)
		if !waitFor(func() bool { return h.port.LinkChanges() >= 2 && h.port.Link().Up }) {
			t.Fatalf("link up not seen: %d changes, %+v", h.port.LinkChanges(), h.port.Link())
		}
	})
	t.Run("intx", func(t *testing.T) {
		h := newHarness(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQINTx}, Options{})
		v := h.port.RxVector(0)
		h.port.EnableRxInterrupt(0)
		h.m.SetLink(false)
		if nictest.WaitFired(t, v) != 1 {
			t.Fatal("configuration change raised no INTx")
		}
		h.port.EnableRxInterrupt(0) // reads the ISR
		if h.port.LinkChanges() != 1 || h.port.Link().Up {
			t.Fatalf("%d changes, link %+v; want 1, down", h.port.LinkChanges(), h.port.Link())
		}
	})
}

func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// bySrcByte2 steers by the third byte of the IPv4 source address.
func bySrcByte2(f []byte, pairs int) int { return int(f[28]) % pairs }
