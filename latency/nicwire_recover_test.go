package latency

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
)

// dmaDevice is a pci.Device that has only its DMA allocator.
type dmaDevice struct {
	pci.Device
	dma pci.DMA
}

func (d dmaDevice) DMA() pci.DMA { return d.dma }

// loopPort is a one-queue nic.Recoverer that loops every frame it sends back to its RX
// queue (a copy into a buffer of its RX pool, which only RxBurst's goroutine touches),
// and checks that no call on its queues overlaps its Recover (overlaps).
type loopPort struct {
	dev        dmaDevice
	rxPool     *nic.Mempool
	needs      nic.RecoverSignal
	mu         sync.Mutex
	looped     [][]byte
	inside     atomic.Int32
	recovering atomic.Bool
	overlaps   atomic.Int64
	recovers   atomic.Int64
}

func (p *loopPort) enter() {
	p.inside.Add(1)
	if p.recovering.Load() {
		p.overlaps.Add(1)
	}
}

func (p *loopPort) Device() pci.Device       { return p.dev }
func (p *loopPort) MAC() net.HardwareAddr    { return net.HardwareAddr{2, 0, 0, 0, 0, 9} }
func (p *loopPort) NumRxQueues() int         { return 1 }
func (p *loopPort) NumTxQueues() int         { return 1 }
func (p *loopPort) RxVector(int) *irq.Vector { return nil }
func (p *loopPort) EnableRxInterrupt(int)    {}
func (p *loopPort) DisableRxInterrupt(int)   {}
func (p *loopPort) Link() nic.Link           { return nic.Link{Up: true} }
func (p *loopPort) Stats() nic.Stats         { return nic.Stats{} }
func (p *loopPort) Close() error             { return nil }
func (p *loopPort) OnRecoverNeeded(f func()) { p.needs.Set(f) }
func (p *loopPort) RecoverBackoff() (first, max time.Duration) {
	return time.Millisecond, time.Millisecond
}

func (p *loopPort) RxBurst(_ int, bufs []*nic.Buf) int {
	p.enter()
	defer p.inside.Add(-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(bufs) && n < len(p.looped) {
		b := p.rxPool.Get()
		if b == nil {
			break
		}
		b.SetLen(copy(b.Data(), p.looped[n]))
		bufs[n] = b
		n++
	}
	p.looped = append(p.looped[:0], p.looped[n:]...)
	return n
}

func (p *loopPort) TxBurst(_ int, bufs []*nic.Buf) int {
	p.enter()
	defer p.inside.Add(-1)
	p.mu.Lock()
	for _, b := range bufs {
		p.looped = append(p.looped, append([]byte(nil), b.Bytes()...))
		b.Free() // sent
	}
	p.mu.Unlock()
	return len(bufs)
}

func (p *loopPort) Recover() error {
	p.recovering.Store(true)
	defer p.recovering.Store(false)
	for range 2 {
		if p.inside.Load() != 0 {
			p.overlaps.Add(1)
		}
		time.Sleep(100 * time.Microsecond) // a window for an overlapping call to show
	}
	p.recovers.Add(1)
	p.needs.Clear()
	return nil
}

// TestNICWireRecovers checks that a wire runs the Recover its port asks for, on its poll
// goroutine and with no Send inside TxBurst meanwhile, and that frames flow after it.
func TestNICWireRecovers(t *testing.T) {
	rxPool, err := nic.NewMempool(sim.NewIOMMU(), 64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	port := &loopPort{dev: dmaDevice{dma: sim.NewIOMMU()}, rxPool: rxPool}
	w, err := NewNICWire(port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); rxPool.Close() })
	var got atomic.Int64
	w.SetHandler(func([]byte, int64) { got.Add(1) })
	frame := make([]byte, 64)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // a sender that keeps TxBurst busy
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = w.Send(frame)
			time.Sleep(10 * time.Microsecond)
		}
	}()
	for i := int64(1); i <= 5; i++ {
		port.needs.Raise()
		if !testutil.WaitFor(10*time.Second, func() bool { return port.recovers.Load() == i }) {
			t.Fatalf("Recover %d did not run (ran %d)", i, port.recovers.Load())
		}
		from := got.Load()
		if !testutil.WaitFor(10*time.Second, func() bool { return got.Load() > from+10 }) {
			t.Fatalf("no frames after Recover %d", i)
		}
	}
	close(stop)
	<-sent
	if n := port.overlaps.Load(); n != 0 {
		t.Errorf("%d calls on the port's queues overlapped its Recover", n)
	}
}
