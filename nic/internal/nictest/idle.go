package nictest

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/wire"
)

// idleQueue is a port's RX queue 0 as the idle policy drives it, with hooks around
// arming and the one the policy calls between arming and waiting.
type idleQueue struct {
	p         nic.Port
	got       int
	bufs      [32]*nic.Buf
	beforeArm func()
	onSleep   func()
}

func (q *idleQueue) Poll() int {
	n := q.p.RxBurst(0, q.bufs[:])
	for _, b := range q.bufs[:n] {
		b.Free()
	}
	q.got += n
	return n
}

func (q *idleQueue) Arm() {
	if q.beforeArm != nil {
		q.beforeArm()
		q.beforeArm = nil
	}
	q.p.EnableRxInterrupt(0)
}

func (q *idleQueue) Disarm() { q.p.DisableRxInterrupt(0) }

func (q *idleQueue) BeforeSleep() {
	if q.onSleep != nil {
		q.onSleep()
	}
}

// FrameBetweenArmAndWait puts a frame into the window after the adaptive policy armed the
// queue and re-polled, right before it waits: the device's interrupt must wake it (a
// timeout wake-up would mean the frame waited for the full wait timeout).
func FrameBetweenArmAndWait(t *testing.T, drv Driver) {
	for _, kind := range drv.IRQKinds() {
		t.Run(kind.String(), func(t *testing.T) {
			h := New(t, drv, nic.Config{Interrupts: nic.IRQModeOf(kind)})
			q := &idleQueue{p: h.Port}
			d, err := idle.New(idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, []*irq.Vector{h.Port.RxVector(0)}, q)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var once sync.Once
			q.onSleep = func() { once.Do(func() { h.Send(1) }) }
			d.Empty(idle.Now())
			s := d.Stats()
			if s.Arms != 1 || s.Sleeps != 1 || s.WakeInterrupt != 1 || s.WakeTimeout != 0 {
				t.Fatalf("after a frame in the arm/wait window: %+v; want one sleep woken by interrupt", s)
			}
			if n := q.Poll(); n != 1 {
				t.Fatalf("next poll got %d frames, want 1", n)
			}
		})
	}
}

// RepollAfterArm lets a frame land while the queue is disarmed, immediately before the
// policy arms it: only the re-poll after arming may be relied on to find it (a virtio
// device sends no notification for it), and it must, without sleeping.
func RepollAfterArm(t *testing.T, drv Driver) {
	h := New(t, drv, nic.Config{Interrupts: nic.IRQMSIX})
	q := &idleQueue{p: h.Port}
	q.beforeArm = func() { h.Send(1) }
	d, err := idle.New(idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, []*irq.Vector{h.Port.RxVector(0)}, q)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Empty(idle.Now())
	s := d.Stats()
	if s.Arms != 1 || s.ArmRaces != 1 || s.Sleeps != 0 || q.got != 1 {
		t.Fatalf("stats %+v, frames %d; want the re-poll to take the frame without sleeping", s, q.got)
	}
}

// reflectLoop is a poll thread: it reflects everything queue 0 receives and sleeps on
// the queue's interrupt when idle, as the dataplane does.
type reflectLoop struct {
	p    nic.Port
	bufs [32]*nic.Buf
}

func (r *reflectLoop) Poll() int {
	n := r.p.RxBurst(0, r.bufs[:])
	sent := 0
	for sent < n {
		k := r.p.TxBurst(0, r.bufs[sent:n])
		if k == 0 {
			break
		}
		sent += k
	}
	for _, b := range r.bufs[sent:n] {
		b.Free()
	}
	return n
}

func (r *reflectLoop) Arm()    { r.p.EnableRxInterrupt(0) }
func (r *reflectLoop) Disarm() { r.p.DisableRxInterrupt(0) }

// ConcurrentWakeups sends frames from another goroutine with random gaps around the idle
// threshold while a poll thread reflects them and sleeps between them, in both interrupt
// modes: every frame must come back, none may wait as long as the wait timeout (what a
// lost wake-up costs), and the thread must have been woken by interrupts. 3000 frames
// per mode (500 with -short).
func ConcurrentWakeups(t *testing.T, drv Driver) {
	frames := 3000
	if testing.Short() {
		frames = 500
	}
	for _, kind := range drv.IRQKinds() {
		t.Run(kind.String(), func(t *testing.T) {
			h := New(t, drv, nic.Config{RxRing: 128, TxRing: 128, Interrupts: nic.IRQModeOf(kind)})
			var back, worst atomic.Int64
			sentAt := make([]int64, frames)
			h.Peer.SetHandler(func(f []byte, ts int64) {
				seq := int(binary.BigEndian.Uint32(f[60:]))
				if seq < frames {
					if l := ts - atomic.LoadInt64(&sentAt[seq]); l > worst.Load() {
						worst.Store(l)
					}
				}
				back.Add(1)
			})
			r := &reflectLoop{p: h.Port}
			const threshold = 50 * time.Microsecond
			d, err := idle.New(idle.PolicyConfig{IdleThreshold: threshold, WaitTimeout: time.Second}, []*irq.Vector{h.Port.RxVector(0)}, r)
			if err != nil {
				t.Fatal(err)
			}
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if r.Poll() > 0 {
						d.Traffic(idle.Now())
					} else {
						d.Empty(idle.Now())
					}
				}
			}()
			rng := rand.New(rand.NewPCG(5, 6))
			f := Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64)
			start := time.Now()
			for i := 0; i < frames; i++ {
				// At most 64 frames in flight: the rings never overflow.
				testutil.WaitFor(5*time.Second, func() bool { return int64(i)-back.Load() < 64 })
				binary.BigEndian.PutUint32(f[60:], uint32(i))
				atomic.StoreInt64(&sentAt[i], wire.Now())
				if err := h.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
				if gap := time.Duration(rng.Int64N(int64(2 * threshold))); gap > threshold/2 {
					time.Sleep(gap)
				}
			}
			ok := testutil.WaitFor(10*time.Second, func() bool { return back.Load() == int64(frames) })
			d.Stop()
			close(stop)
			<-done
			s := d.Stats()
			d.Close()
			if !ok {
				t.Fatalf("%d of %d frames back after %v (model %+v, port %+v, idle %+v)", back.Load(), frames, time.Since(start), h.Model.Counters(), h.Port.Stats(), s)
			}
			if w := time.Duration(worst.Load()); w >= time.Second {
				t.Errorf("a frame waited %v, the full wait timeout: a lost wake-up (%+v)", w, s)
			}
			if s.WakeInterrupt == 0 {
				t.Errorf("never woken by an interrupt: %+v", s)
			}
			t.Logf("%d frames, worst %v: sleeps %d, woken by interrupt %d, arm races %d, spurious %d", frames, time.Duration(worst.Load()), s.Sleeps, s.WakeInterrupt, s.ArmRaces, s.WakeSpurious)
		})
	}
}
