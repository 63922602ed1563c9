package idle

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

// fakeQueues is a queue set whose "NIC" is the test: inject adds a frame and signals the
// vector when the queues are armed, as a device raises its interrupt.
type fakeQueues struct {
	v *irq.Vector

	mu       sync.Mutex
	pending  int
	armed    bool
	got      int
	arms     int
	disarms  int
	polls    int
	onSleep  func() // BeforeSleep hook
	onArm    func() // runs inside Arm, after the interrupt is enabled
	preArmed func() // runs inside Arm, before the interrupt is enabled
}

func (f *fakeQueues) inject(n int) {
	f.mu.Lock()
	f.pending += n
	armed := f.armed
	f.mu.Unlock()
	if armed {
		f.v.Signal()
	}
}

// frames is how many frames polls have taken.
func (f *fakeQueues) frames() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got
}

func (f *fakeQueues) Poll() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	n := f.pending
	f.pending = 0
	f.got += n
	return n
}

func (f *fakeQueues) Arm() {
	if f.preArmed != nil {
		f.preArmed()
	}
	f.mu.Lock()
	f.armed = true
	f.arms++
	f.mu.Unlock()
	if f.onArm != nil {
		f.onArm()
	}
}

func (f *fakeQueues) Disarm() {
	f.mu.Lock()
	f.armed = false
	f.disarms++
	f.mu.Unlock()
}

func (f *fakeQueues) BeforeSleep() {
	if f.onSleep != nil {
		f.onSleep()
	}
}

func newIdler(t *testing.T, cfg PolicyConfig) (*Idler, *fakeQueues) {
	t.Helper()
	v, err := irq.NewEventfd(irq.MSIX, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	q := &fakeQueues{v: v}
	d, err := New(cfg, []*irq.Vector{v, nil, v}, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, q
}

// runLoop drives d like a dataplane loop until stop is closed.
func runLoop(d *Idler, q Queues, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if n := q.Poll(); n > 0 {
			d.Traffic(Now())
		} else {
			d.Empty(Now())
		}
	}
}

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

func TestNewWithoutVector(t *testing.T) {
	q := &fakeQueues{}
	if _, err := New(DefaultPolicy(), []*irq.Vector{nil}, q); !errors.Is(err, ErrNoVector) {
		t.Fatalf("New(adaptive, no vector) = %v, want ErrNoVector", err)
	}
	for _, c := range []PolicyConfig{{Mode: Busy}, {Mode: SleepRange, SleepMax: time.Microsecond}} {
		d, err := New(c, nil, q)
		if err != nil {
			t.Fatalf("New(%v, no vector) = %v", c.Mode, err)
		}
		d.Close()
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

func TestBusyNeverSleeps(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{Mode: Busy})
	for i := 0; i < 100000; i++ {
		d.Empty(Now())
	}
	if s := d.Stats(); s.Arms != 0 || s.Sleeps != 0 || s.Asleep != 0 || q.arms != 0 || q.polls != 0 {
		t.Fatalf("busy policy slept: %+v", s)
	}
}

func TestSleepRange(t *testing.T) {
	min, max := 20*time.Microsecond, 50*time.Microsecond
	d, _ := newIdler(t, PolicyConfig{Mode: SleepRange, SleepMin: min, SleepMax: max})
	var low, high int
	for i := 0; i < 100000; i++ {
		ns := time.Duration(d.randSleep())
		if ns < min || ns > max {
			t.Fatalf("draw %v outside [%v, %v]", ns, min, max)
		}
		if ns < (min+max)/2 {
			low++
		} else {
			high++
		}
	}
	if low < 40000 || high < 40000 {
		t.Fatalf("draws not spread over the range: %d low, %d high", low, high)
	}
	const n = 50
	for i := 0; i < n; i++ {
		d.Empty(Now())
	}
	s := d.Stats()
	if s.Sleeps != n || s.Arms != 0 {
		t.Fatalf("%+v; want %d range sleeps", s, n)
	}
	if s.Asleep < n*min {
		t.Fatalf("slept %v in %d sleeps of at least %v", s.Asleep, n, min)
	}
}

func TestHousekeepingRate(t *testing.T) {
	const hz = 500
	period := time.Second / hz
	for _, tc := range []struct {
		name    string
		traffic bool // only polls that find frames: yields happen at the deadline
	}{{"empty polls", false}, {"unbroken traffic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newIdler(t, PolicyConfig{Mode: Busy, HousekeepingHz: hz, HousekeepingLength: 20 * time.Microsecond})
			// The loop's clock is the test's: a poll every 10 µs for 100 ms, however long
			// the machine takes, so the counts below do not depend on its load.
			start := Now()
			end := start + int64(100*time.Millisecond)
			for now := start; now < end; now += int64(10 * time.Microsecond) {
				if tc.traffic {
					d.Traffic(now)
				} else {
					d.Empty(now)
				}
			}
			elapsed := time.Duration(end - start)
			s := d.Stats()
			// At most one yield per period (a hard bound of the code) ...
			if max := uint64(elapsed/period) + 1; s.Yields > max {
				t.Fatalf("%d yields in %v, more than one per %v", s.Yields, elapsed, period)
			}
			// ... and at least one per deadline (1.25 periods after the previous yield).
			if want := uint64(elapsed/(period*5/4)) - 1; s.Yields < want {
				t.Fatalf("%d yields in %v, want at least %d", s.Yields, elapsed, want)
			}
			if s.YieldTime < time.Duration(s.Yields)*20*time.Microsecond {
				t.Fatalf("yielded %v in %d yields of 20µs", s.YieldTime, s.Yields)
			}
		})
	}
}

func TestIdlerStopWakesSleeper(t *testing.T) {
	for _, delivery := range []Delivery{Inline, Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			d, _ := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second, Delivery: delivery})
			done := make(chan struct{})
			go func() {
				d.Empty(Now())
				close(done)
			}()
			if !testutil.WaitFor(30*time.Second, func() bool { return d.State() == Asleep }) {
				t.Fatalf("thread %v, never asleep", d.State())
			}
			d.Stop()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Stop did not wake the sleeper")
			}
			if s := d.Stats(); s.WakeStop != 1 || s.WakeTimeout != 0 {
				t.Fatalf("%+v; want the sleep ended by Stop", s)
			}
			d.Empty(Now()) // after Stop a sleep returns at once
			if s := d.Stats(); s.WakeStop != 2 || s.WakeTimeout != 0 {
				t.Fatalf("%+v; want the sleep after Stop to end at once", s)
			}
		})
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

func TestIdlerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, delivery := range []Delivery{Inline, Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			d, q := newIdler(t, PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second, Delivery: delivery, HousekeepingHz: 1000, HousekeepingLength: time.Microsecond})
			q.onSleep = func() { q.inject(1) }
			allocs := testing.AllocsPerRun(200, func() {
				d.Empty(Now()) // arm, sleep, woken by the frame
				q.Poll()
				d.Traffic(Now())
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per sleep cycle", allocs)
			}
		})
	}
	d, _ := newIdler(t, PolicyConfig{Mode: SleepRange, SleepMin: time.Microsecond, SleepMax: 2 * time.Microsecond})
	if allocs := testing.AllocsPerRun(100, func() { d.Empty(Now()) }); allocs != 0 {
		t.Fatalf("%v allocations per range sleep", allocs)
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

func TestNextIdleWait(t *testing.T) {
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

// TestIdleWaitBackoff checks that consecutive timed-out sleeps of a silent thread get
// longer, and that traffic brings the bound back to WaitTimeout. A wait never returns
// before its bound, so the time asleep is at least the sum of the bounds.
func TestIdleWaitBackoff(t *testing.T) {
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
