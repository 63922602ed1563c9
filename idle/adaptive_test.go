package idle

import (
	"runtime"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

func TestAdaptiveFrameBetweenArmAndSleep(t *testing.T) {
	for _, delivery := range []Delivery{Inline, Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			// A one-second wait_timeout: a frame that waited for it would show as a
			// timeout wake-up, which the counters below rule out.
			d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second, Delivery: delivery})
			q.onSleep = func() {
				q.onSleep = nil
				q.inject(1) // armed: signals the vector, as the NIC would
			}
			d.Empty(Now())
			s := d.Stats()
			if s.Arms != 1 || s.Sleeps != 1 || s.WakeInterrupt != 1 || s.WakeTimeout != 0 {
				t.Fatalf("after a frame in the arm/sleep window: %+v; want one sleep woken by interrupt", s)
			}
			if q.armed {
				t.Fatal("queues still armed after the wake-up")
			}
			if n := q.Poll(); n != 1 {
				t.Fatalf("next poll got %d frames, want 1", n)
			}
			d.Traffic(Now())
			if s := d.Stats(); s.WakeSpurious != 0 {
				t.Fatalf("counted a spurious wake-up: %+v", s)
			}
		})
	}
}

func TestAdaptiveRepollCatchesFrameBeforeInterrupt(t *testing.T) {
	// The frame lands while the interrupt is still masked (no signal, as with a NIC that
	// does not fire a pending cause on unmask): only the re-poll after arming sees it.
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second})
	q.preArmed = func() { q.preArmed = nil; q.inject(1) }
	d.Empty(Now())
	s := d.Stats()
	if s.Arms != 1 || s.ArmRaces != 1 || s.Sleeps != 0 || q.got != 1 || q.armed {
		t.Fatalf("stats %+v, frames %d, armed %v; want the re-poll to take the frame without sleeping", s, q.got, q.armed)
	}
}

func TestAdaptiveDrainsStaleInterrupt(t *testing.T) {
	// An interrupt left over from before the arm (fired after the last disarm) must not
	// end the next sleep: Arm drains the vectors before re-polling.
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Millisecond})
	q.v.Signal()
	d.Empty(Now())
	if s := d.Stats(); s.WakeInterrupt != 0 || s.WakeTimeout != 1 {
		t.Fatalf("stale interrupt: %+v; want a timeout wake-up", s)
	}
}

func TestAdaptiveThreshold(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Second / 2, WaitTimeout: time.Millisecond})
	now := Now()
	d.Traffic(now)
	for i := 0; i < 1000; i++ {
		d.Empty(now + int64(i)*int64(time.Microsecond))
	}
	if s := d.Stats(); s.Arms != 0 || q.arms != 0 {
		t.Fatalf("armed within the idle threshold: %+v", s)
	}
	d.Empty(now + int64(time.Second/2))
	if s := d.Stats(); s.Arms != 1 || s.Sleeps != 1 || s.WakeTimeout != 1 {
		t.Fatalf("at the threshold: %+v; want one arm and one sleep", s)
	}
	// After a timeout the thread sleeps again at the next empty poll.
	d.Empty(now + int64(time.Second/2) + 1)
	if s := d.Stats(); s.Sleeps != 2 {
		t.Fatalf("after a timeout: %+v; want a second sleep at once", s)
	}
}

// TestZeroThreshold checks that a zero idle threshold sleeps at the first empty poll
// after traffic, and that DefaultPolicy's threshold keeps polling then.
func TestZeroThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   PolicyConfig
		sleep bool
	}{
		{"zero", PolicyConfig{WaitTimeout: time.Millisecond}, true},
		{"default", DefaultPolicy(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newIdler(t, tc.cfg)
			now := Now()
			d.Traffic(now)
			d.Empty(now)
			if s := d.Stats(); (s.Sleeps == 1) != tc.sleep || s.Threshold != tc.cfg.IdleThreshold {
				t.Fatalf("%+v after one empty poll: sleeps %d, threshold %v; want asleep %v", tc.cfg, s.Sleeps, s.Threshold, tc.sleep)
			}
		})
	}
}

func TestSpuriousWakeup(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second})
	q.onSleep = func() { q.onSleep = nil; q.v.Signal() } // interrupt, no frame
	d.Empty(Now())
	d.Stop()       // so that the next sleep ends at once
	d.Empty(Now()) // that poll found nothing
	s := d.Stats()
	if s.WakeInterrupt != 1 || s.WakeSpurious != 1 {
		t.Fatalf("%+v; want one spurious interrupt wake-up", s)
	}
}

func TestAdaptiveNoLostFrames(t *testing.T) {
	for _, delivery := range []Delivery{Inline, Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			d, q := newIdler(t, PolicyConfig{IdleThreshold: 20 * time.Microsecond, WaitTimeout: time.Second, Delivery: delivery})
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { runLoop(d, q, stop); close(done) }()
			const frames = 2000
			for i := 0; i < frames; i++ {
				q.inject(1)
				if i%3 == 0 {
					time.Sleep(time.Duration(i%50) * time.Microsecond)
				}
			}
			if !testutil.WaitFor(30*time.Second, func() bool { return q.frames() == frames }) {
				t.Fatalf("got %d of %d frames", q.frames(), frames)
			}
			close(stop)
			d.Stop()
			<-done
			if s := d.Stats(); s.WakeTimeout != 0 {
				t.Errorf("%+v: a frame waited for the timeout", s)
			}
		})
	}
}

func TestGCDoesNotWaitForRawSleeper(t *testing.T) {
	// A raw sleeper holds its P. The garbage collector's stop-the-world must still get
	// through at once (its preemption signal ends the wait with EINTR and the retry
	// stops), not after the one-second wait_timeout: if it had to wait, the sleep would
	// have ended by timeout before runtime.GC returned.
	d, _ := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second})
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		d.Empty(Now())
		close(done)
	}()
	if !testutil.WaitFor(30*time.Second, func() bool { return d.State() == Asleep }) {
		t.Fatalf("thread %v, never asleep", d.State())
	}
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	if s := d.Stats(); s.WakeTimeout != 0 || s.Sleeps != 0 {
		t.Fatalf("%+v: the collection waited for the sleeper's timeout", s)
	}
	d.Stop()
	<-done
}

func TestNextWait(t *testing.T) {
	ms := time.Millisecond
	tests := []struct{ cur, base, want time.Duration }{
		{10 * ms, 10 * ms, 20 * ms},
		{80 * ms, 10 * ms, 160 * ms},
		{160 * ms, 10 * ms, 160 * ms}, // WaitBackoff × base
		{500 * ms, 100 * ms, time.Second},
		{time.Second, 500 * ms, time.Second}, // never above MaxWaitTimeout
		{ms, 10 * ms, 10 * ms},               // never below base
	}
	for _, tt := range tests {
		if got := nextWait(tt.cur, tt.base); got != tt.want {
			t.Errorf("nextWait(%v, %v) = %v, want %v", tt.cur, tt.base, got, tt.want)
		}
	}
}

// TestWaitBackoff checks that consecutive timed-out sleeps of a silent thread get
// longer, and that traffic brings the bound back to WaitTimeout. A wait never returns
// before its bound, so the time asleep is at least the sum of the bounds.
func TestWaitBackoff(t *testing.T) {
	base := time.Millisecond
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: base})
	const sleeps = 4
	for d.Stats().Sleeps < sleeps {
		d.Empty(Now())
	}
	s := d.Stats()
	if s.WakeTimeout != sleeps {
		t.Fatalf("stats %+v: want %d timeouts", s, sleeps)
	}
	var want time.Duration
	for b, i := base, 0; i < sleeps; b, i = nextWait(b, base), i+1 {
		want += b
	}
	if s.Asleep < want {
		t.Errorf("asleep %v after %d silent sleeps, want at least %v (backed-off bounds)", s.Asleep, sleeps, want)
	}
	if d.wait != WaitBackoff*base {
		t.Errorf("bound after %d timeouts = %v", sleeps, d.wait)
	}
	q.inject(1)
	q.Poll()
	d.Traffic(Now())
	if d.wait != base {
		t.Errorf("bound after traffic = %v, want %v", d.wait, base)
	}
}

// TestDeepIdle checks that a raw sleeper waits raw until its bound backed off to the
// limit, then blocking (deep idle), and raw again after an interrupt or a frame.
func TestDeepIdle(t *testing.T) {
	base := time.Millisecond
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: base})
	// toDeep sleeps until the thread is in deep idle, checking each wait's mode first.
	toDeep := func() {
		t.Helper()
		timeouts := d.Stats().WakeTimeout
		for b := base; b < backoffLimit(base); b = nextWait(b, base) {
			if m := d.waitMode(); m != irq.WaitRaw {
				t.Fatalf("bound %v: wait %v, want raw", d.wait, m)
			}
			for d.Stats().WakeTimeout == timeouts {
				d.Empty(Now())
			}
			timeouts++
		}
		if m := d.waitMode(); m != irq.WaitBlocking || d.wait != WaitBackoff*base {
			t.Fatalf("bound %v after the backoff: wait %v, want blocking", d.wait, m)
		}
		if s := d.Stats(); s.DeepSleeps != 0 {
			t.Fatalf("%+v: deep sleeps before the backoff ended", s)
		}
	}

	toDeep()
	// A frame arrives by interrupt during the deep wait.
	q.onSleep = func() { q.inject(1) }
	for d.Stats().WakeInterrupt == 0 {
		d.Empty(Now())
	}
	q.onSleep = nil
	if s := d.Stats(); s.DeepSleeps != 1 || s.WakeTimeout != 4 {
		t.Fatalf("%+v: want one deep sleep, ended by the interrupt", s)
	}
	if m := d.waitMode(); m != irq.WaitRaw || d.wait != base {
		t.Fatalf("after an interrupt: wait %v with bound %v, want raw with %v", m, d.wait, base)
	}
	q.Poll()
	d.Traffic(Now())

	d.c.deepSleeps.Store(0)
	toDeep()
	q.inject(1)
	q.Poll()
	d.Traffic(Now())
	if m := d.waitMode(); m != irq.WaitRaw || d.wait != base {
		t.Fatalf("after traffic: wait %v with bound %v, want raw with %v", m, d.wait, base)
	}
}

// TestDeepIdleBlockingMode checks that a thread configured to wait blocking never counts
// deep sleeps: it blocks that way all along.
func TestDeepIdleBlockingMode(t *testing.T) {
	base := time.Millisecond
	d, _ := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: base, WaitMode: irq.WaitBlocking})
	for d.Stats().WakeTimeout < 6 {
		d.Empty(Now())
	}
	if s := d.Stats(); s.DeepSleeps != 0 || d.waitMode() != irq.WaitBlocking {
		t.Fatalf("%+v: wait %v", s, d.waitMode())
	}
}
