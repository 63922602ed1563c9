package nictest

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/nic"
)

// Forwarder runs a driver's receive-and-send-back loop on queue pair 0 against
// hand-written completions: the "NIC" costs a few stores per packet and no model code
// runs.
type Forwarder struct {
	Port Port
	dev  DeviceSide
	bufs []*nic.Buf
}

// NewForwarder opens a port of drv on a model (no interrupts, default rings) and detaches
// it from the model.
func NewForwarder(tb testing.TB, drv Driver, maxBatch int) *Forwarder {
	tb.Helper()
	return NewForwarderMTU(tb, drv, maxBatch, 0)
}

// NewForwarderMTU is NewForwarder with a port (and a model) of that MTU (0: the default).
func NewForwarderMTU(tb testing.TB, drv Driver, maxBatch, mtu int) *Forwarder {
	tb.Helper()
	m, err := drv.Family.New(ModelConfig{Ring: nic.DefaultRing, MTU: mtu})
	if err != nil {
		tb.Fatal(err)
	}
	// Once detached, the doorbells and notifications go nowhere: the Forwarder plays the
	// device's DMA side and no model code runs.
	var detached atomic.Bool
	dev := Hooked(m.PCI(), Hooks{Cut: &detached})
	p, err := drv.Open(dev, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1, MTU: mtu})
	if err != nil {
		m.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		detached.Store(false)
		p.Close()
	})
	detached.Store(true)
	side, err := p.DeviceSide(m.Device().IOMMU())
	if err != nil {
		tb.Fatal(err)
	}
	return &Forwarder{Port: p, dev: side, bufs: make([]*nic.Buf, maxBatch)}
}

// Step lets the "NIC" complete n receive buffers with 60-byte frames, forwards them and
// lets the "NIC" complete the transmitted frames. It returns the frames forwarded.
func (f *Forwarder) Step(n int) int {
	f.dev.CompleteRx(n)
	got := f.Port.RxBurst(0, f.bufs[:n])
	sent := f.Port.TxBurst(0, f.bufs[:got])
	for _, b := range f.bufs[sent:got] {
		b.Free()
	}
	f.dev.CompleteTx(sent)
	return sent
}

// SetFrameLen makes the "NIC" complete receive buffers with frames of n bytes instead of
// 60 (the buffers' contents are left as they are: a driver that does not copy a frame
// touches none of it). It fails tb where the driver's DeviceSide has no such knob.
func (f *Forwarder) SetFrameLen(tb testing.TB, n int) {
	tb.Helper()
	s, ok := f.dev.(FrameLenSetter)
	if !ok {
		tb.Fatalf("%T cannot complete frames of another length than 60", f.dev)
	}
	s.SetRxLen(n)
}

// FrameLenSetter is a DeviceSide that completes receive buffers with frames of a length
// it is given (60 until then).
type FrameLenSetter interface {
	SetRxLen(n int)
}

// ForwardSizes are BenchmarkForwardSizes's frames: the shortest frame (64 bytes), the
// longest of the standard MTU (1514) on a port of the default MTU, and the longest of MTU
// 9000 (9014) on a port of that MTU.
var ForwardSizes = []struct{ Len, MTU int }{{64, 0}, {1514, 0}, {9014, 9000}}

// BenchmarkForwardSizes runs BenchmarkForward at batch 32 with each of ForwardSizes's
// frame lengths, each as a sub-benchmark size=N.
func BenchmarkForwardSizes(b *testing.B, drv Driver) {
	for _, sz := range ForwardSizes {
		b.Run(fmt.Sprintf("size=%d", sz.Len), func(b *testing.B) {
			f := NewForwarderMTU(b, drv, 32, sz.MTU)
			f.SetFrameLen(b, sz.Len)
			forward(b, f, 32)
		})
	}
}

// ForwardSizesCheck forwards batches of each of ForwardSizes's frames through a Forwarder
// and checks that every frame is received at its length and sent, with no error counted:
// what BenchmarkForwardSizes measures is forwarding, not dropping.
func ForwardSizesCheck(t *testing.T, drv Driver) {
	for _, sz := range ForwardSizes {
		t.Run(fmt.Sprintf("size=%d", sz.Len), func(t *testing.T) {
			f := NewForwarderMTU(t, drv, 32, sz.MTU)
			f.SetFrameLen(t, sz.Len)
			for range 8 {
				f.dev.CompleteRx(32)
				got := f.Port.RxBurst(0, f.bufs)
				for _, b := range f.bufs[:got] {
					if b.Len() != sz.Len {
						t.Fatalf("received a frame of %d bytes, want %d", b.Len(), sz.Len)
					}
				}
				sent := f.Port.TxBurst(0, f.bufs[:got])
				for _, b := range f.bufs[sent:got] {
					b.Free()
				}
				f.dev.CompleteTx(sent)
				if got != 32 || sent != 32 {
					t.Fatalf("received %d and sent %d of 32 frames of %d bytes", got, sent, sz.Len)
				}
			}
			if st := f.Port.Stats(); st.RxErrors != 0 || st.TxErrors != 0 {
				t.Fatalf("stats %+v after frames of %d bytes", st, sz.Len)
			}
		})
	}
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
	st := f.Port.Stats()
	if st.RxErrors != 0 || st.TxErrors != 0 || (!drv.Family.StatsFromDevice && st.RxPackets < 32000) {
		t.Fatalf("stats %+v after 1000 batches of 32", st)
	}
}

// BenchmarkForward measures one packet per op at the given batch size. Besides ns/op
// (wall clock, which on a shared machine includes time the thread was descheduled) it
// reports the thread's CPU time per packet.
func BenchmarkForward(b *testing.B, drv Driver, batch int) {
	forward(b, NewForwarder(b, drv, batch), batch)
}

// forward is BenchmarkForward's loop on f.
func forward(b *testing.B, f *Forwarder, batch int) {
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
	for _, kind := range drv.IRQKinds() {
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
