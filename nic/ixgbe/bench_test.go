package ixgbe

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	simixgbe "github.com/uiod/uiod/sim/ixgbe"
)

// detachedDevice is a modelled device whose BAR0 can be cut off after init: register
// writes (the tail doorbells) then go nowhere, and the test plays the NIC's DMA side by
// writing descriptors itself. That measures the driver alone.
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

// forwarder runs the driver's receive-and-send-back loop on one queue pair against
// hand-written write-backs.
type forwarder struct {
	p              *Port
	dev            *detachedDevice
	rxDesc, txDesc []byte
	rxNext, txNext int
	mask           int
	bufs           []*nic.Buf
}

func newForwarder(tb testing.TB, maxBatch int) *forwarder {
	tb.Helper()
	m, err := simixgbe.New(simixgbe.Config{Strict: true})
	if err != nil {
		tb.Fatal(err)
	}
	bar, err := m.Device().Region(0)
	if err != nil {
		tb.Fatal(err)
	}
	dev := &detachedDevice{Device: m.Device(), bar: &detachableRegion{Region: bar}}
	p, err := Open(dev, nic.Config{NoIRQ: true, LinkTimeout: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		dev.bar.detached.Store(false)
		p.Close()
	})
	dev.bar.detached.Store(true)
	f := &forwarder{p: p, dev: dev, mask: p.cfg.RxRing - 1, bufs: make([]*nic.Buf, maxBatch)}
	if f.rxDesc, err = m.Device().IOMMU().Translate(p.rx[0].IOVA(), p.rx[0].Len()); err != nil {
		tb.Fatal(err)
	}
	if f.txDesc, err = m.Device().IOMMU().Translate(p.tx[0].IOVA(), p.tx[0].Len()); err != nil {
		tb.Fatal(err)
	}
	return f
}

// step lets the "NIC" complete n receive descriptors with 60-byte frames, forwards them
// and lets the "NIC" complete the transmit descriptors.
func (f *forwarder) step(n int) int {
	for i := 0; i < n; i++ {
		d := f.rxDesc[f.rxNext*16 : f.rxNext*16+16]
		binary.LittleEndian.PutUint32(d[12:], 60)
		sim.StoreUint32(d[8:], 0x3) // DD | EOP
		f.rxNext = (f.rxNext + 1) & f.mask
	}
	got := f.p.RxBurst(0, f.bufs[:n])
	sent := f.p.TxBurst(0, f.bufs[:got])
	for _, b := range f.bufs[sent:got] {
		b.Free()
	}
	for i := 0; i < sent; i++ {
		sim.StoreUint32(f.txDesc[f.txNext*16+12:], 0x1) // DD
		f.txNext = (f.txNext + 1) & f.mask
	}
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
}

// BenchmarkForward is the driver-only cost of forwarding a frame (receive, send back,
// reclaim): one op is one packet. The NIC's side is a few stores per packet into the
// descriptor rings; no model code runs.
//
//	go test -run '^$' -bench Forward -benchtime 2000000x ./nic/ixgbe/
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
			// On a shared machine the wall clock (ns/op) includes time the thread was
			// descheduled; the thread's CPU time is the driver's own cost.
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/pkt")
			b.ReportMetric(1e3/(float64(cpu)/float64(b.N)), "cpu-Mpps")
		})
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds.
func threadCPU(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return ts.Nano()
}
