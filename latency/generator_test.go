package latency

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/wire"
)

// delayWire is a wire.Port that delivers every frame to its handler D after it was sent,
// stamped at the moment of delivery, like a cable with a fixed latency.
type delayWire struct {
	d    time.Duration
	q    chan delayed
	mu   sync.Mutex
	h    wire.Handler
	done chan struct{}
}

type delayed struct {
	frame []byte
	due   int64
}

func newDelayWire(d time.Duration) *delayWire {
	w := &delayWire{d: d, q: make(chan delayed, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for f := range w.q {
			for wire.Now() < f.due {
				if left := f.due - wire.Now(); left > int64(2*time.Millisecond) {
					time.Sleep(time.Duration(left) - time.Millisecond)
				}
			}
			w.mu.Lock()
			h := w.h
			w.mu.Unlock()
			if h != nil {
				h(f.frame, wire.Now())
			}
		}
	}()
	return w
}

func (w *delayWire) Send(f []byte) error {
	w.q <- delayed{append([]byte(nil), f...), wire.Now() + int64(w.d)}
	return nil
}

func (w *delayWire) SetHandler(h wire.Handler) { w.mu.Lock(); w.h = h; w.mu.Unlock() }

func (w *delayWire) Close() error { close(w.q); <-w.done; return nil }

func TestRunMeasuresInjectedDelay(t *testing.T) {
	var medians []int64
	for _, d := range []time.Duration{time.Millisecond, 6 * time.Millisecond} {
		w := newDelayWire(d)
		res, err := Run(context.Background(), w, w, Config{
			Label: d.String(), Count: 50, Pattern: Constant{Gap: 200 * time.Microsecond},
			Timeout: time.Second, Spin: -1,
		})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary()
		t.Log(res.MoonGen())
		if res.Sent != 50 || res.Received != 50 || res.Lost != 0 || s.Samples != 50 {
			t.Fatalf("%v: sent %d received %d lost %d samples %d", d, res.Sent, res.Received, res.Lost, s.Samples)
		}
		// Never faster than the cable; slower only by scheduling noise (generous bound).
		if s.Min < int64(d) || s.Median > int64(d)+int64(500*time.Millisecond) {
			t.Fatalf("%v: min %d ns, median %d ns", d, s.Min, s.Median)
		}
		medians = append(medians, s.Median)
	}
	if medians[1] <= medians[0] {
		t.Fatalf("6 ms wire measured faster (%d ns) than 1 ms wire (%d ns)", medians[1], medians[0])
	}
}

// scriptedWire delivers probes synchronously with per-sequence misbehaviour: drop,
// duplicate, hold one back until after the next, or stamp it as arriving far too late.
type scriptedWire struct {
	h       wire.Handler
	drop    map[uint64]bool
	dup     map[uint64]bool
	hold    map[uint64]bool
	late    map[uint64]time.Duration
	held    []byte
	injects [][]byte // extra frames to deliver before the first probe
}

func (w *scriptedWire) Send(f []byte) error {
	p, err := ParseProbe(f)
	if err != nil {
		return err
	}
	for _, x := range w.injects {
		w.h(x, wire.Now())
	}
	w.injects = nil
	switch {
	case w.drop[p.Seq]:
		return nil
	case w.hold[p.Seq]:
		w.held = append([]byte(nil), f...)
		return nil
	}
	w.h(f, wire.Now()+int64(w.late[p.Seq]))
	if w.dup[p.Seq] {
		w.h(f, wire.Now())
	}
	if w.held != nil {
		w.h(w.held, wire.Now())
		w.held = nil
	}
	return nil
}

func (w *scriptedWire) SetHandler(h wire.Handler) {
	if h == nil {
		h = func([]byte, int64) {}
	}
	w.h = h
}

func (w *scriptedWire) Close() error { return nil }

func TestRunAccounting(t *testing.T) {
	stale, _ := newFrameTemplate(DefaultAddrs(), 64, KindProbe)
	w := &scriptedWire{
		drop: map[uint64]bool{3: true, 11: true},
		dup:  map[uint64]bool{5: true},
		hold: map[uint64]bool{7: true},
		late: map[uint64]time.Duration{9: 10 * time.Second},
		injects: [][]byte{
			make([]byte, 64), // not a probe at all
			append([]byte(nil), stale.stamp(99, -5)...), // sent before the run began
		},
	}
	res, err := Run(context.Background(), w, w, Config{
		Label: "script", Count: 20, Pattern: Constant{Gap: 50 * time.Microsecond}, Timeout: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Sent: 20, Received: 17, Lost: 2, Late: 1, Duplicates: 1, Reordered: 1, Foreign: 1, Stale: 1}
	got := Result{Sent: res.Sent, Received: res.Received, Lost: res.Lost, Late: res.Late,
		Duplicates: res.Duplicates, Reordered: res.Reordered, Foreign: res.Foreign, Stale: res.Stale}
	if got != want {
		t.Fatalf("accounting\n got %+v\nwant %+v", got, want)
	}
	if s := res.Summary(); s.Samples != 17 {
		t.Fatalf("histogram holds %d samples, want 17", s.Samples)
	}
	if res.Pacing.Frames != 20 {
		t.Fatalf("pacer saw %d frames", res.Pacing.Frames)
	}
}

func TestRunBackgroundLoad(t *testing.T) {
	a, b := wire.Pair()
	res, err := Run(context.Background(), a, b, Config{
		Duration: 100 * time.Millisecond, Pattern: Constant{Gap: time.Millisecond},
		LoadRate: 20000, LoadSize: 256, Spin: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.BackgroundSent == 0 || res.BackgroundReceived != res.BackgroundSent {
		t.Fatalf("background sent %d received %d", res.BackgroundSent, res.BackgroundReceived)
	}
	if res.Received != res.Sent || res.Sent == 0 {
		t.Fatalf("probes sent %d received %d", res.Sent, res.Received)
	}
	// Ratio only: 20 kpps for 100 ms is ~2000 frames; well over the 100 probes.
	if res.BackgroundSent < 5*res.Sent {
		t.Fatalf("background load %d frames vs %d probes", res.BackgroundSent, res.Sent)
	}
}

func TestRunCancel(t *testing.T) {
	a, b := wire.Pair()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	res, err := Run(ctx, a, b, Config{Duration: time.Hour, Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Received != res.Sent {
		t.Fatalf("sent %d received %d", res.Sent, res.Received)
	}
}

func TestConfigErrors(t *testing.T) {
	a, b := wire.Pair()
	for _, c := range []Config{
		{},                       // neither count nor duration
		{Count: -1},              // negative
		{Count: 1, Size: 40},     // too small
		{Count: 1, Timeout: -1},  // negative timeout
		{Count: 1, LoadRate: -5}, // negative load
		{Count: 1, LoadRate: 1, LoadSize: MaxFrameSize + 1},          // load too big
		{Count: 1, Pattern: Constant{}},                              // zero gap
		{Count: 1, Pattern: Poisson{}},                               // zero rate
		{Count: 1, Pattern: OnOff{Rate: 1000, On: time.Microsecond}}, // ON shorter than a gap
	} {
		if _, err := Run(context.Background(), a, b, c); err == nil {
			t.Errorf("Run(%+v) accepted", c)
		}
	}
}
