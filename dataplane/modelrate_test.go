package dataplane

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// rateRig is one busy poll thread forwarding Q RX queues of an 82599 model to the Q TX
// queues of a second one (queue i to queue i), the ixgbe driver on both, with flows found
// per RX queue so that the test can hand each queue exactly a batch. Everything runs on
// the benchmark's goroutine: the far end's Send DMAs a frame into the ring at once, the
// TX doorbell hands a frame to the far end at once.
type rateRig struct {
	ports  [2]nic.Port
	models [2]*intel.Model
	far    [2]wire.Port
	loop   *loop
	flows  [][]byte // per RX queue, a 64-byte frame of a flow RSS puts there
	out    int      // frames the far end of port 1 received
}

// udpFrame is a 64-byte IPv4/UDP frame from source port sport (the flow RSS hashes).
func udpFrame(sport uint16) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{2, 0, 0, 0, 0xee, 1})
	copy(f[6:12], []byte{2, 0, 0, 0, 0xff, 0})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 50)
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ^testutil.Checksum(ip))
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], 9)
	binary.BigEndian.PutUint16(f[38:], 30)
	return f
}

func newRateRig(tb testing.TB, queues, ring, batch int) *rateRig {
	tb.Helper()
	pair, err := intel.NewPair(intel.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	r := &rateRig{}
	for i := range r.ports {
		p, err := nic.Open(pair.Models[i].PCI(), "ixgbe", nic.Config{RxRing: ring, TxRing: ring,
			RxQueues: queues, TxQueues: queues, Promiscuous: true, Interrupts: nic.IRQNone})
		if err != nil {
			tb.Fatal(err)
		}
		r.ports[i], r.models[i], r.far[i] = p, pair.Models[i], pair.Far[i]
	}
	r.far[1].SetHandler(func([]byte, int64) { r.out++ })
	r.far[0].SetHandler(func([]byte, int64) {})
	tb.Cleanup(func() {
		for i, p := range r.ports {
			if err := p.Close(); err != nil {
				tb.Errorf("close port %d: %v", i, err)
			}
			if err := r.models[i].Device().Err(); err != nil {
				tb.Errorf("model %d: %v", i, err)
			}
		}
	})
	// Find a flow for every RX queue: send one frame, see which queue has it.
	r.flows = make([][]byte, queues)
	bufs := make([]*nic.Buf, 1)
	for sport, found := uint16(1024), 0; found < queues; sport++ {
		if sport == 0 {
			tb.Fatalf("RSS put no flow on %d of %d queues", queues-found, queues)
		}
		f := udpFrame(sport)
		if err := r.far[0].Send(f); err != nil {
			tb.Fatal(err)
		}
		for q := range queues {
			if r.ports[0].RxBurst(q, bufs) == 1 {
				bufs[0].Free()
				if r.flows[q] == nil {
					r.flows[q] = f
					found++
				}
			}
		}
	}
	qs := make([]Queue, queues)
	for i := range qs {
		qs[i] = Queue{Name: fmt.Sprintf("q%d", i), RxPort: r.ports[0], RxQ: i, TxPort: r.ports[1], TxQ: i}
	}
	l := testLoop(tb, batch, L2Fwd, qs)
	r.loop = l
	return r
}

// fill sends a batch of frames to every RX queue.
func (r *rateRig) fill(tb testing.TB, batch int) {
	for _, f := range r.flows {
		for range batch {
			if err := r.far[0].Send(f); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkModelRate is one busy poll thread forwarding between two 82599 models through
// the ixgbe driver, against queues per thread, ring size and batch size: each iteration
// gives every queue one batch and runs one loop turn, which forwards them all. It reports
// frames per second of the thread's CPU time ("Mfps-cpu": the loop, the driver and both
// sides of the model, whose own cost per frame sim/intel's BenchmarkModelRXTX gives; CPU
// time, not wall time, so that a loaded machine's preemptions stay out of it). "empty" turns find nothing: the loop and driver cost of polling Q idle
// queues (bench/callgrind.sh models counts it).
func BenchmarkModelRate(b *testing.B) {
	for _, q := range []int{1, 2, 4, 8} {
		for _, ring := range []int{256, 512, 1024, 4096} {
			for _, batch := range []int{8, 16, 32, 64} {
				b.Run(fmt.Sprintf("queues=%d/ring=%d/batch=%d", q, ring, batch), func(b *testing.B) {
					r := newRateRig(b, q, ring, batch)
					l := r.loop
					for range 2 * ring / batch { // twice round the rings: the first pass fills the model's scratch buffers
						r.fill(b, batch)
						l.step()
					}
					r.out = 0
					runtime.LockOSThread() // the thread's CPU time is the iteration's
					defer runtime.UnlockOSThread()
					b.ReportAllocs()
					b.ResetTimer()
					cpu0 := threadCPUTime()
					for range b.N {
						r.fill(b, batch)
						if n := l.step(); n != q*batch {
							b.Fatalf("a turn forwarded %d frames, want %d", n, q*batch)
						}
					}
					cpu := threadCPUTime() - cpu0
					b.StopTimer()
					frames := float64(b.N * q * batch)
					if r.out != b.N*q*batch {
						b.Fatalf("the far end got %d of %.0f frames", r.out, frames)
					}
					b.ReportMetric(frames/cpu.Seconds()/1e6, "Mfps-cpu")
				})
			}
		}
		b.Run(fmt.Sprintf("queues=%d/empty", q), func(b *testing.B) {
			r := newRateRig(b, q, 512, 32)
			stepReport(b, r.loop)
		})
	}
}

// The rig forwards every batch it is given, on every queue.
func TestModelRateRig(t *testing.T) {
	for _, q := range []int{1, 4} {
		r := newRateRig(t, q, 256, 16)
		for i := range 40 { // past a ring's worth, so RX refill and TX reclaim run
			r.fill(t, 16)
			if n := r.loop.step(); n != q*16 {
				t.Fatalf("queues %d, turn %d forwarded %d frames, want %d", q, i, n, q*16)
			}
		}
		if r.out != 40*q*16 {
			t.Fatalf("queues %d: far end got %d frames, want %d", q, r.out, 40*q*16)
		}
	}
}
