package dataplane

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/ixgbe" // the driver under test
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// modelRig is two 82599 models in one IOMMU, driven by the real ixgbe driver, with the
// test on the far end of both cables. One thread, on cpu (-1: unpinned), forwards both
// directions.
type modelRig struct {
	iommu          *sim.IOMMU
	models         [2]*intel.Model
	ports          [2]nic.Port
	far            [2]wire.Port // the test's ends
	lat            []int64      // by sequence number, written on the polling thread
	count, dupes   atomic.Int64
	wrongDirection atomic.Int64
	dp             *Dataplane
	closeOnce      sync.Once
}

func newModelRig(t testing.TB, cpu int, policy idle.PolicyConfig, frames int) *modelRig {
	t.Helper()
	pair, err := intel.NewPair(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &modelRig{iommu: pair.IOMMU, lat: make([]int64, frames)}
	for i := range r.ports {
		m, far := pair.Models[i], pair.Far[i]
		p, err := nic.Open(m.PCI(), "ixgbe", nic.Config{RxRing: 256, TxRing: 256, Promiscuous: true})
		if err != nil {
			t.Fatal(err)
		}
		r.models[i], r.ports[i], r.far[i] = m, p, far
		out := i
		far.SetHandler(func(frame []byte, ts int64) {
			seq := frameSeq(frame)
			if seq >= uint64(len(r.lat)) {
				return
			}
			if r.lat[seq] != 0 {
				r.dupes.Add(1)
			}
			r.lat[seq] = max(1, wire.Now()-frameTime(frame))
			if int(frame[5]) != out { // frames are addressed to the port they leave by
				r.wrongDirection.Add(1)
			}
			r.count.Add(1)
		})
	}
	dp, err := New(Config{Policy: policy, Threads: []Thread{{CPU: cpu, Queues: []Queue{
		{Name: "0to1", RxPort: r.ports[0], TxPort: r.ports[1]},
		{Name: "1to0", RxPort: r.ports[1], TxPort: r.ports[0]},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	r.dp = dp
	t.Cleanup(func() { r.close(t) })
	return r
}

// send puts frame seq on the wire into port `in`, addressed to the other port's far end.
func (r *modelRig) send(in int, seq uint64) {
	var buf [frameLen]byte
	dst := []byte{2, 0, 0, 0, 0xee, byte(1 - in)}
	src := []byte{2, 0, 0, 0, 0xff, byte(in)}
	r.far[in].Send(makeFrame(buf[:], dst, src, seq, wire.Now()))
}

// close stops the dataplane, then closes the ports, and checks that the models saw no
// fault, no buffer leaked and no DMA memory is left mapped.
func (r *modelRig) close(t testing.TB) {
	r.closeOnce.Do(func() {
		r.dp.Stop()
		for i, p := range r.ports {
			if err := p.Close(); err != nil {
				t.Errorf("close port %d: %v", i, err)
			}
			if err := r.models[i].Device().Err(); err != nil {
				t.Errorf("model %d: %v", i, err)
			}
		}
		if n := r.iommu.Mappings(); n != 0 {
			t.Errorf("%d DMA mappings left after closing the ports", n)
		}
	})
}

func TestModelFrameBetweenArmAndSleep(t *testing.T) {
	r := newModelRig(t, -1, idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}, 1)
	var once sync.Once
	r.dp.loops[0].beforeSleep = func() {
		// Armed and re-polled: the frame reaches the NIC now, on this thread; the model
		// DMAs it into the ring and raises MSI-X.
		once.Do(func() { r.send(0, 0) })
	}
	if err := r.dp.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the frame", func() bool { return r.count.Load() == 1 })
	wokeByInterrupt(t, r.dp.Threads()[0])
	r.close(t)
}

func TestModelRandomGaps(t *testing.T) {
	frames := 20000
	if testing.Short() {
		frames = 2000
	}
	const threshold = 50 * time.Microsecond
	r := newModelRig(t, -1, idle.PolicyConfig{IdleThreshold: threshold, WaitTimeout: time.Second}, frames)
	if err := r.dp.Start(); err != nil {
		t.Fatal(err)
	}
	paceRandomGaps(t, frames, threshold, 3, func(i int, rng *rand.Rand) {
		// Keep fewer frames in flight than an RX ring holds: on a loaded machine the poll
		// thread can be descheduled for longer than 256 gaps, and a full ring drops frames
		// (counted as missed by the model), which is not what this test is about.
		testutil.WaitFor(10*time.Second, func() bool { return int64(i)-r.count.Load() < 128 })
		r.send(rng.IntN(2), uint64(i))
	})
	waitFor(t, "every frame", func() bool { return r.count.Load() == int64(frames) })
	r.close(t)
	worst := checkLatencies(t, r.lat)
	if r.dupes.Load() != 0 || r.wrongDirection.Load() != 0 {
		t.Fatalf("%d duplicates, %d frames out of the wrong port", r.dupes.Load(), r.wrongDirection.Load())
	}
	s := sumStats(r.dp.Stats())
	if s.RxPackets != uint64(frames) || s.TxPackets+s.Drops != s.RxPackets {
		t.Fatalf("counters %+v for %d frames", s, frames)
	}
	th := r.dp.Threads()[0]
	if th.Idle.WakeInterrupt == 0 {
		t.Fatalf("never woken by an interrupt: %+v", th.Idle)
	}
	t.Logf("%d frames, worst %v, idle %+v", frames, worst, th.Idle)
}

func TestModelStopWhileAsleep(t *testing.T) {
	for _, delivery := range []idle.Delivery{idle.Inline, idle.Threaded} {
		t.Run(delivery.String(), func(t *testing.T) {
			r := newModelRig(t, -1, idle.PolicyConfig{IdleThreshold: time.Nanosecond, WaitTimeout: time.Second, Delivery: delivery}, 10)
			if err := r.dp.Start(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				r.send(i%2, uint64(i))
			}
			waitFor(t, "the frames", func() bool { return r.count.Load() == 10 })
			waitFor(t, "sleep", func() bool { return r.dp.Threads()[0].State == idle.Asleep })
			r.close(t) // Stop, then the ports: checks faults, leaks, mappings
			if th := r.dp.Threads()[0]; th.Idle.WakeStop != 1 || th.Idle.WakeTimeout != 0 {
				t.Fatalf("idle %+v: want the sleep ended by Stop", th.Idle)
			}
		})
	}
}
