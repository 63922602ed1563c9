package virtio

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// detachedDevice is a modelled device whose BAR4 writes (the notifications) can be cut
// off after init; the forwarder then plays the device's side of the rings itself, so that
// only the driver's cost is measured.
type detachedDevice struct {
	pci.Device
	bar *detachableRegion
}

func (d *detachedDevice) Region(bar int) (pci.Region, error) {
	if bar != 4 {
		return d.Device.Region(bar)
	}
	return d.bar, nil
}

type detachableRegion struct {
	NarrowRegion
	detached atomic.Bool
}

func (r *detachableRegion) Write16(off uint32, v uint16) {
	if !r.detached.Load() {
		r.NarrowRegion.Write16(off, v)
	}
}

// deviceSide is the device's view of one ring for the forwarder: it takes available
// heads and writes used entries with plain stores and one atomic index store per batch.
type deviceSide struct {
	r         *vring
	lastAvail uint16
	used      uint16
}

func (d *deviceSide) complete(n int, length uint32) {
	b := d.r.mem.Bytes
	l := d.r.l
	availIdx := uint16(sim.LoadUint32(b[l.avail:]) >> 16)
	if int(availIdx-d.lastAvail) < n {
		panic(fmt.Sprintf("device side: %d available, want %d", availIdx-d.lastAvail, n))
	}
	mask := uint16(l.size - 1)
	for i := 0; i < n; i++ {
		head := binary.LittleEndian.Uint16(b[l.avail+4+2*int(d.lastAvail&mask):])
		e := b[l.used+4+8*int(d.used&mask):]
		binary.LittleEndian.PutUint32(e, uint32(head))
		binary.LittleEndian.PutUint32(e[4:], length)
		d.lastAvail++
		d.used++
	}
	sim.StoreUint32(b[l.used:], uint32(d.used)<<16)
}

// forwarder runs the receive-and-send-back loop on queue pair 0 against hand-written used
// entries.
type forwarder struct {
	p      *Port
	rx, tx deviceSide
	bufs   []*nic.Buf
}

func newForwarder(tb testing.TB, maxBatch int) *forwarder {
	tb.Helper()
	m, err := simvirtio.New(simvirtio.Config{Strict: true, QueueSize: 1024})
	if err != nil {
		tb.Fatal(err)
	}
	bar, err := m.PCI().Region(4)
	if err != nil {
		tb.Fatal(err)
	}
	dev := &detachedDevice{Device: m.PCI(), bar: &detachableRegion{NarrowRegion: bar.(NarrowRegion)}}
	p, err := Open(dev, nic.Config{NoIRQ: true, LinkTimeout: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		dev.bar.detached.Store(false)
		p.Close()
	})
	dev.bar.detached.Store(true)
	return &forwarder{p: p, rx: deviceSide{r: p.rx[0].ring}, tx: deviceSide{r: p.tx[0].ring}, bufs: make([]*nic.Buf, maxBatch)}
}

// step lets the "device" complete n receive buffers with 60-byte frames, forwards them and
// completes the transmit chains. It returns the frames forwarded.
func (f *forwarder) step(n int) int {
	f.rx.complete(n, netHdrLen+60)
	got := f.p.RxBurst(0, f.bufs[:n])
	sent := f.p.TxBurst(0, f.bufs[:got])
	for _, b := range f.bufs[sent:got] {
		b.Free()
	}
	f.tx.complete(sent, 0)
	return sent
}

func TestBurstAllocs(t *testing.T) {
	f := newForwarder(t, 32)
	allocs := testing.AllocsPerRun(1000, func() {
		if n := f.step(32); n != 32 {
			t.Fatalf("forwarded %d of 32", n)
		}
	})
	if allocs != 0 {
		t.Fatalf("RxBurst+TxBurst allocate %.1f times per batch", allocs)
	}
	if st := f.p.Stats(); st.RxErrors != 0 || st.TxErrors != 0 || st.RxPackets < 32000 {
		t.Fatalf("stats %+v", st)
	}
}

func TestArmAllocs(t *testing.T) {
	for _, kind := range []irq.Kind{irq.MSIX, irq.INTx} {
		eventModesKind(t, kind, func(t *testing.T, mc simvirtio.Config, opt Options) {
			h := newHarness(t, mc, nic.Config{Interrupts: nic.IRQModeOf(kind)}, opt)
			allocs := testing.AllocsPerRun(1000, func() {
				h.port.EnableRxInterrupt(0)
				h.port.DisableRxInterrupt(0)
			})
			if allocs != 0 {
				t.Fatalf("EnableRxInterrupt+DisableRxInterrupt allocate %.1f times", allocs)
			}
		})
	}
}

func eventModesKind(t *testing.T, kind irq.Kind, f func(t *testing.T, mc simvirtio.Config, opt Options)) {
	t.Run(kind.String(), func(t *testing.T) { eventModes(t, f) })
}

// BenchmarkForward is the driver-only cost of forwarding a frame (receive, send back,
// reclaim) with the rings' used entries written by the benchmark: one op is one packet.
//
//	go test -run '^$' -bench Forward -benchtime 3000000x ./nic/virtio/
func BenchmarkForward(b *testing.B) {
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			f := newForwarder(b, batch)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := threadCPU(b)
			for done := 0; done < b.N; done += batch {
				f.step(batch)
			}
			cpu := threadCPU(b) - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/pkt")
		})
	}
}

func threadCPU(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return ts.Nano()
}
