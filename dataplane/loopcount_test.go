package dataplane

import (
	"net"
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
	if l.idler, err = idle.New(idle.PolicyConfig{Mode: idle.Busy}, nil, l); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.idler.Close() })
	l.startWall = idle.Now()
	l.nextPublish = l.startWall + publishEvery
	l.nextCPU = l.startWall + cpuEvery
	return l
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
			l.queues[1].rx = &countPort{} // the return direction stays empty (its TX slot stays the port's)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l.step()
			}
		})
	}
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

// testLoop lays out the loop of a one-thread dataplane over queues, as New does, without
// an idle policy: the caller sets l.idler.
func testLoop(tb testing.TB, batch int, app App, queues []Queue) *loop {
	tb.Helper()
	cfg := Config{Batch: batch, App: app, Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: queues}}}
	if err := cfg.validate(); err != nil {
		tb.Fatal(err)
	}
	dp := &Dataplane{cfg: cfg, mirrors: make([]mirrorSlot, len(cfg.Ports))}
	return dp.newLoop(0, cfg.Threads[0])
}
