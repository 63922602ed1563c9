package virtio

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	simvirtio "github.com/uiod/uiod/sim/virtio"
	"github.com/uiod/uiod/wire"
)

// reflectLoop is a poll thread: it reflects everything queue 0 receives and sleeps on
// the queue's interrupt when idle, as the dataplane does.
type reflectLoop struct {
	p    *Port
	bufs [32]*nic.Buf
	got  atomic.Int64
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
	r.got.Add(int64(n))
	return n
}
func (r *reflectLoop) Arm()    { r.p.EnableRxInterrupt(0) }
func (r *reflectLoop) Disarm() { r.p.DisableRxInterrupt(0) }

// TestConcurrentWakeups sends frames from another goroutine with random gaps around the
// idle threshold while a poll thread reflects them and sleeps between them: every frame
// must come back, none may wait as long as the wait timeout (what a lost wake-up costs),
// and the thread must have been woken by interrupts.
func TestConcurrentWakeups(t *testing.T) {
	frames := 3000
	if testing.Short() {
		frames = 500
	}
	for _, kind := range []irq.Kind{irq.MSIX, irq.INTx} {
		eventModesKind(t, kind, func(t *testing.T, mc simvirtio.Config, opt Options) {
			h := newHarness(t, mc, nic.Config{RxRing: 128, TxRing: 128, Interrupts: nic.IRQModeOf(kind)}, opt)
			var back, worst atomic.Int64
			sentAt := make([]int64, frames)
			h.peer.SetHandler(func(f []byte, ts int64) {
				seq := int(binary.BigEndian.Uint32(f[60:]))
				if seq < frames {
					if l := ts - atomic.LoadInt64(&sentAt[seq]); l > worst.Load() {
						worst.Store(l)
					}
				}
				back.Add(1)
			})
			r := &reflectLoop{p: h.port}
			const threshold = 50 * time.Microsecond
			d, err := idle.New(idle.PolicyConfig{IdleThreshold: threshold, WaitTimeout: time.Second}, []*irq.Vector{h.port.RxVector(0)}, r)
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			done := make(chan struct{})
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
			f := nictest.Frame(rng, nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64)
			start := time.Now()
			for i := 0; i < frames; i++ {
				for deadline := time.Now().Add(5 * time.Second); int64(i)-back.Load() >= 64 && time.Now().Before(deadline); {
					time.Sleep(50 * time.Microsecond)
				}
				binary.BigEndian.PutUint32(f[60:], uint32(i))
				atomic.StoreInt64(&sentAt[i], wire.Now())
				if err := h.peer.Send(f); err != nil {
					t.Fatal(err)
				}
				if gap := time.Duration(rng.Int64N(int64(2 * threshold))); gap > threshold/2 {
					time.Sleep(gap)
				}
			}
			ok := waitForLong(func() bool { return back.Load() == int64(frames) }, 10*time.Second)
			d.Stop()
			close(stop)
			<-done
			s := d.Stats()
			d.Close()
			if !ok {
				t.Fatalf("%d of %d frames back after %v (model %+v, port %+v, idle %+v)", back.Load(), frames, time.Since(start), h.m.Stats(), h.port.Stats(), s)
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

func waitForLong(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}
