package nictest

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// detachedDevice is a modelled device whose BAR0 can be cut off after init: register
// writes (the tail doorbells) then go nowhere, and the Forwarder plays the NIC's DMA side
// by writing descriptors itself. That measures the driver alone.
type detachedDevice struct {
	*sim.Device
	bar *detachableRegion
}

func (d *detachedDevice) Region(bar int) (pci.Region, error) {
	if bar != 0 {
		return d.Device.Region(bar)
	}
	return d.bar, nil
}

type detachableRegion struct {
	pci.Region
	detached atomic.Bool
}

func (r *detachableRegion) Write32(off, v uint32) {
	if !r.detached.Load() {
		r.Region.Write32(off, v)
	}
}

// Forwarder runs a driver's receive-and-send-back loop on queue pair 0 against
// hand-written write-backs: the "NIC" costs a few stores per packet and no model code
// runs.
type Forwarder struct {
	Port           Port
	rxDesc, txDesc []byte
	rxNext, txNext int
	rxMask, txMask int
	bufs           []*nic.Buf
}

// NewForwarder opens a port of drv on a model (no interrupts, default rings) and detaches
// it from the model.
func NewForwarder(tb testing.TB, drv Driver, maxBatch int) *Forwarder {
	tb.Helper()
	m, err := intel.New(intel.Config{Strict: true, Flavor: drv.Flavor, Quirks: drv.Quirks})
	if err != nil {
		tb.Fatal(err)
	}
	bar, err := m.Device().Region(0)
	if err != nil {
		tb.Fatal(err)
	}
	dev := &detachedDevice{Device: m.Device(), bar: &detachableRegion{Region: bar}}
	p, err := drv.Open(dev, nic.Config{NoIRQ: true, LinkTimeout: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		dev.bar.detached.Store(false)
		p.Close()
	})
	dev.bar.detached.Store(true)
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	f := &Forwarder{Port: p, rxMask: rq.Size() - 1, txMask: tq.Size() - 1, bufs: make([]*nic.Buf, maxBatch)}
	if f.rxDesc, err = m.Device().IOMMU().Translate(rq.IOVA(), rq.Len()); err != nil {
		tb.Fatal(err)
	}
	if f.txDesc, err = m.Device().IOMMU().Translate(tq.IOVA(), tq.Len()); err != nil {
		tb.Fatal(err)
	}
	return f
}

// Step lets the "NIC" complete n receive descriptors with 60-byte frames, forwards them
// and lets the "NIC" complete the transmit descriptors. It returns the frames forwarded.
func (f *Forwarder) Step(n int) int {
	for i := 0; i < n; i++ {
		d := f.rxDesc[f.rxNext*16 : f.rxNext*16+16]
		binary.LittleEndian.PutUint32(d[12:], 60)
		sim.StoreUint32(d[8:], 0x3) // DD | EOP
		f.rxNext = (f.rxNext + 1) & f.rxMask
	}
	got := f.Port.RxBurst(0, f.bufs[:n])
	sent := f.Port.TxBurst(0, f.bufs[:got])
	for _, b := range f.bufs[sent:got] {
		b.Free()
	}
	for i := 0; i < sent; i++ {
		sim.StoreUint32(f.txDesc[f.txNext*16+12:], 0x1) // DD
		f.txNext = (f.txNext + 1) & f.txMask
	}
	return sent
}

// BurstAllocs fails if receiving and sending a batch allocates.
func BurstAllocs(t *testing.T, drv Driver) {
	f := NewForwarder(t, drv, 32)
	allocs := testing.AllocsPerRun(1000, func() {
		if n := f.Step(32); n != 32 {
			t.Fatalf("forwarded %d of 32", n)
		}
	})
	if allocs != 0 {
		t.Fatalf("RxBurst+TxBurst allocate %.1f times per batch", allocs)
	}
}

// BenchmarkForward measures one packet per op at the given batch size. Besides ns/op
// (wall clock, which on a shared machine includes time the thread was descheduled) it
// reports the thread's CPU time per packet.
func BenchmarkForward(b *testing.B, drv Driver, batch int) {
	f := NewForwarder(b, drv, batch)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU(b)
	for done := 0; done < b.N; done += batch {
		f.Step(batch)
	}
	cpu := threadCPU(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/pkt")
	b.ReportMetric(1e3*float64(b.N)/float64(cpu), "cpu-Mpps")
}

func threadCPU(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return ts.Nano()
}

// ArmAllocs checks that arming and disarming a queue's interrupt, which the adaptive idle
// policy does on every idle transition, allocates nothing in either interrupt mode.
func ArmAllocs(t *testing.T, drv Driver) {
	for _, kind := range []irq.Kind{irq.MSIX, irq.INTx} {
		t.Run(kind.String(), func(t *testing.T) {
			h := New(t, drv, nic.Config{Interrupts: nic.IRQModeOf(kind)})
			allocs := testing.AllocsPerRun(1000, func() {
				h.Port.EnableRxInterrupt(0)
				h.Port.DisableRxInterrupt(0)
			})
			if allocs != 0 {
				t.Fatalf("EnableRxInterrupt+DisableRxInterrupt allocate %.1f times", allocs)
			}
		})
	}
}
