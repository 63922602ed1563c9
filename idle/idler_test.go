package idle

import (
	"errors"
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

func TestBusyNeverSleeps(t *testing.T) {
	d, q := newIdler(t, PolicyConfig{Mode: Busy})
	for i := 0; i < 100000; i++ {
		d.Empty(Now())
	}
	if s := d.Stats(); s.Arms != 0 || s.Sleeps != 0 || s.Asleep != 0 || q.arms != 0 || q.polls != 0 {
		t.Fatalf("busy policy slept: %+v", s)
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
