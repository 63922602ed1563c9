package dataplane

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// countPort is a nic.Port that costs next to nothing: RxBurst hands back the same n
// buffers every call and TxBurst takes whatever it is given without freeing it. It lets
// BenchmarkLoopStep (and bench/callgrind.sh loop) count the loop's own work per poll,
// apart from any driver's.
type countPort struct {
	frames []*nic.Buf
}

func (p *countPort) MAC() net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }
func (p *countPort) NumRxQueues() int      { return 1 }
func (p *countPort) NumTxQueues() int      { return 1 }
func (p *countPort) RxBurst(_ int, bufs []*nic.Buf) int {
	return copy(bufs, p.frames)
}
func (p *countPort) TxBurst(_ int, bufs []*nic.Buf) int { return len(bufs) }
func (p *countPort) RxVector(int) *irq.Vector           { return nil }
func (p *countPort) EnableRxInterrupt(int)              {}
func (p *countPort) DisableRxInterrupt(int)             {}
func (p *countPort) Link() nic.Link                     { return nic.Link{Up: true} }
func (p *countPort) Stats() nic.Stats                   { return nic.Stats{} }
func (p *countPort) Close() error                       { return nil }

// newCountLoop is a busy-polling loop over two countPorts forwarding to each other (the
// l2fwd pair of the guest benchmark), each RX burst returning frames buffers.
func newCountLoop(tb testing.TB, frames, batch int) *loop {
	pool, err := nic.NewMempool(&goDMA{}, 2*frames+1, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	ports := [2]*countPort{}
	for i := range ports {
		ports[i] = &countPort{}
		for range frames {
			b := pool.Get()
			b.SetLen(60)
			ports[i].frames = append(ports[i].frames, b)
		}
	}
	l := testLoop(tb, batch, L2Fwd, []Queue{
		{Name: "p0", RxPort: ports[0], TxPort: ports[1]},
		{Name: "p1", RxPort: ports[1], TxPort: ports[0]},
	})
	return l
}

// skipRunEnv pins the idle policy's run of untold empty polls in BenchmarkLoopStep and
// BenchmarkLoopQueues (idle.Idler.PinSkipRun): bench/callgrind.sh sets it to the run a
// native run of the benchmark reports as "run", since under valgrind the run sized by
// time stays near 0.
const skipRunEnv = "UIOD_BENCH_SKIP_RUN"

// pinSkipRun applies skipRunEnv to l's Idler.
func pinSkipRun(tb testing.TB, l *loop) {
	if v := os.Getenv(skipRunEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("%s=%q: want a number of polls", skipRunEnv, v)
		}
		l.idler.PinSkipRun(n)
	}
}

// stepReport runs b.N turns of l, reporting the mean run of untold empty polls the idle
// policy allowed ("run": natively sized by time, see idle.Skip).
func stepReport(b *testing.B, l *loop) {
	pinSkipRun(b, l)
	b.ReportAllocs()
	b.ResetTimer()
	runs := 0
	for range b.N {
		l.step()
		runs += l.idler.SkipRun()
	}
	b.ReportMetric(float64(runs)/float64(b.N), "run")
}

// BenchmarkLoopStep measures one turn of a busy polling thread's loop (two queues, the
// ports free): "empty" polls find nothing, "frames" find a full batch of 32 on one queue.
// Under callgrind (bench/callgrind.sh loop) it gives the loop's instructions per turn.
func BenchmarkLoopStep(b *testing.B) {
	for _, c := range []struct {
		name   string
		frames int
	}{{"empty", 0}, {"frames/batch=32", 32}} {
		b.Run(c.name, func(b *testing.B) {
			l := newCountLoop(b, c.frames, 32)
			l.rx[1].port = &countPort{} // the return direction stays empty (its TX slot stays the port's)
			stepReport(b, l)
		})
	}
}

// BenchmarkLoopQueues measures an empty turn of a busy thread polling 1, 2, 4 or 8 free
// queues: under callgrind (bench/callgrind.sh queues) the loop's cost per queue polled.
func BenchmarkLoopQueues(b *testing.B) {
	for _, nq := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("queues=%d", nq), func(b *testing.B) {
			l := newQueuesLoop(b, nq)
			stepReport(b, l)
		})
	}
}

// newQueuesLoop is a busy-polling loop over nq empty countPorts, each forwarding to the
// next.
func newQueuesLoop(tb testing.TB, nq int) *loop {
	ports := make([]*countPort, nq)
	for i := range ports {
		ports[i] = &countPort{}
	}
	qs := make([]Queue, nq)
	for i := range qs {
		qs[i] = Queue{Name: fmt.Sprintf("p%d", i), RxPort: ports[i], TxPort: ports[(i+1)%nq]}
	}
	return testLoop(tb, 32, L2Fwd, qs)
}

func TestLoopStepAllocatesNothing(t *testing.T) {
	l := newCountLoop(t, 32, 32)
	if n := testing.AllocsPerRun(1000, func() { l.step() }); n != 0 {
		t.Fatalf("a loop turn allocates %.1f times", n)
	}
	if got := l.step(); got != 64 {
		t.Fatalf("a turn over two full queues found %d frames, want 64", got)
	}
}

// testLoop lays out the loop of a one-thread dataplane over queues, as New does, with a
// busy Idler (closed at cleanup) and its clocks started as run starts them, but no
// thread: the caller turns it (step, Poll) on its own goroutine.
func testLoop(tb testing.TB, batch int, app App, queues []Queue) *loop {
	tb.Helper()
	cfg := Config{Batch: batch, App: app, Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: queues}}}
	if err := cfg.validate(); err != nil {
		tb.Fatal(err)
	}
	dp := &Dataplane{cfg: cfg, mirrors: make([]mirrorSlot, len(cfg.Ports))}
	l := dp.newLoop(0, cfg.Threads[0])
	var err error
	if l.idler, err = idle.New(cfg.Policy, nil, l); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.idler.Close() })
	l.startWall = idle.Now()
	l.nextPublish = l.startWall + publishEvery
	l.nextCPU = l.startWall + cpuEvery
	return l
}

// Polls and EmptyPolls are counted per thread and per non-empty burst and derived at
// publish: every queue's Polls is the thread's polls, EmptyPolls those that returned
// nothing, whether the idle policy was told of the empty polls or not.
func TestLoopPollCounts(t *testing.T) {
	l := newCountLoop(t, 32, 32)
	l.rx[1].port = &countPort{} // empty
	const turns = 1000
	for range turns {
		l.step()
	}
	l.rx[0].port = &countPort{} // now empty too: these turns go mostly untold
	for range turns {
		l.step()
	}
	l.publish(idle.Now())
	full, empty := l.queues[0].c.snapshot("p0", 0), l.queues[1].c.snapshot("p1", 0)
	if full.Polls != 2*turns || full.EmptyPolls != turns || full.RxPackets != 32*turns {
		t.Fatalf("queue with frames for %d of %d turns: polls %d, empty %d, rx %d", turns, 2*turns,
			full.Polls, full.EmptyPolls, full.RxPackets)
	}
	if empty.Polls != 2*turns || empty.EmptyPolls != 2*turns || empty.RxPackets != 0 {
		t.Fatalf("empty queue: polls %d, empty %d, rx %d; want %d, %d, 0", empty.Polls, empty.EmptyPolls,
			empty.RxPackets, 2*turns, 2*turns)
	}
}

func TestFrameBytes(t *testing.T) {
	pool, err := nic.NewMempool(&goDMA{}, 40, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var frames []*nic.Buf
	for i := range 40 {
		b := pool.Get()
		b.SetLen(60 + 7*i)
		frames = append(frames, b)
	}
	for n := 0; n <= len(frames); n++ {
		want := 0
		for _, b := range frames[:n] {
			want += b.Len()
		}
		if got := frameBytes(frames[:n]); got != want {
			t.Fatalf("frameBytes of %d frames = %d, want %d", n, got, want)
		}
	}
}

// The loop leaves the last bursts' pointers in its buffer slice; parking for Exclusive
// (which may close a port and its mempool) clears them.
func TestParkClearsBurstBuffers(t *testing.T) {
	l := newCountLoop(t, 32, 32)
	l.step()
	if l.bufs[0] == nil {
		t.Fatal("the burst left no buffer in the slice: nothing to test")
	}
	g := &parkGate{release: make(chan struct{})}
	g.parked.Add(1)
	close(g.release)
	l.parkAt(g)
	for i, b := range l.bufs {
		if b != nil {
			t.Fatalf("bufs[%d] still set after parking", i)
		}
	}
}
