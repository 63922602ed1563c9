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
	const sleeps = 6
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

// TestWaitPlan checks a raw sleeper's plan for its waits: raw, bounded by WaitTimeout and
// by the start of deep idle, until DeepIdleAfter passed since the last frame or
// interrupt, then blocking for MaxWaitTimeout; a blocking sleeper always blocks.
func TestWaitPlan(t *testing.T) {
	ms := int64(time.Millisecond)
	deep := int64(DeepIdleAfter)
	tests := []struct {
		name  string
		mode  irq.WaitMode
		wait  time.Duration
		at    int64 // since the last frame or interrupt
		want  irq.WaitMode
		bound time.Duration
	}{
		{"fresh", irq.WaitRaw, 10 * time.Millisecond, 0, irq.WaitRaw, 10 * time.Millisecond},
		{"backed off", irq.WaitRaw, 80 * time.Millisecond, 15 * ms, irq.WaitRaw, 80 * time.Millisecond},
		{"cut at deep idle", irq.WaitRaw, 80 * time.Millisecond, deep - 30*ms, irq.WaitRaw, 30 * time.Millisecond},
		{"deep idle", irq.WaitRaw, 160 * time.Millisecond, deep, irq.WaitBlocking, MaxWaitTimeout},
		{"long silence", irq.WaitRaw, time.Second, 10 * deep, irq.WaitBlocking, MaxWaitTimeout},
		{"blocking sleeper", irq.WaitBlocking, 10 * time.Millisecond, 10 * deep, irq.WaitBlocking, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitMode: tt.mode})
			d.wait = tt.wait
			m, b := d.waitPlan(d.quiet + tt.at)
			if m != tt.want || b != tt.bound {
				t.Errorf("waitPlan(%v after quiet) = %v, %v; want %v, %v", time.Duration(tt.at), m, b, tt.want, tt.bound)
			}
		})
	}
}

// TestDeepIdle checks that a raw sleeper with nothing to do goes into deep idle (its
// waits block) by itself, and that an interrupt or a frame brings the raw wait back.
func TestDeepIdle(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second})
	toDeep := func() {
		t.Helper()
		// The first wait is raw and ends when deep idle starts, well before its 1 s bound.
		if m, b := d.waitPlan(Now()); m != irq.WaitRaw || b > DeepIdleAfter {
			t.Fatalf("first wait %v for %v, want raw for at most %v", m, b, DeepIdleAfter)
		}
		for d.Stats().WakeTimeout == 0 {
			d.Empty(Now())
		}
		if m, _ := d.waitPlan(Now()); m != irq.WaitBlocking {
			t.Fatalf("after a silent wait: %v, want blocking", m)
		}
		if s := d.Stats(); s.DeepSleeps != 0 {
			t.Fatalf("%+v: deep sleeps before deep idle", s)
		}
	}

	toDeep()
	// A frame arrives by interrupt during the deep wait.
	q.onSleep = func() { q.inject(1) }
	for d.Stats().WakeInterrupt == 0 {
		d.Empty(Now())
	}
	q.onSleep = nil
	if s := d.Stats(); s.DeepSleeps != 1 || s.WakeTimeout != 1 {
		t.Fatalf("%+v: want one deep sleep, ended by the interrupt", s)
	}
	if m, _ := d.waitPlan(Now()); m != irq.WaitRaw {
		t.Fatalf("after an interrupt: %v, want raw", m)
	}
	q.Poll()
	d.Traffic(Now())

	d.c.deepSleeps.Store(0)
	d.c.wakeTimeout.Store(0)
	toDeep()
	q.inject(1)
	q.Poll()
	d.Traffic(Now())
	if m, _ := d.waitPlan(Now()); m != irq.WaitRaw {
		t.Fatalf("after traffic: %v, want raw", m)
	}
}
