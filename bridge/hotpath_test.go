package bridge

import (
	"fmt"
	"sync"
	"testing"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
)

// countSink counts decisions and frees copies: a sink that allocates nothing.
type countSink struct{ sent, copies, drops int }

func (s *countSink) Send(int, dataplane.PortID)                     { s.sent++ }
func (s *countSink) Drop(int, dataplane.DropReason)                 { s.drops++ }
func (s *countSink) SendCopy(_ int, c *nic.Buf, _ dataplane.PortID) { s.copies++; c.Free() }

// fill loads frames into buffers of pool.
func fill(t testing.TB, pool *nic.Mempool, frames [][]byte) []*nic.Buf {
	bufs := make([]*nic.Buf, len(frames))
	for i, f := range frames {
		bufs[i] = pool.Get()
		if bufs[i] == nil {
			t.Fatal("pool empty")
		}
		bufs[i].SetLen(copy(bufs[i].Data(), f))
	}
	return bufs
}

func TestProcessAllocatesNothing(t *testing.T) {
	r := newRig(t, Config{Ports: vlanPorts()})
	// Known unicast both ways (untagged in, tagged out and back), a broadcast, an unknown
	// unicast, a drop.
	r.burst(0, 2, testFrame(bc, mB, 10, 0, 0))
	frames := [][]byte{
		testFrame(mB, mA, -1, 0, 1),
		testFrame(mA, mB, 10, 0, 2),
		testFrame(bc, mA, -1, 0, 3),
		testFrame(mD, mA, -1, 0, 4),
		testFrame("01:80:c2:00:00:00", mA, -1, 0, 5),
	}
	in := []dataplane.PortID{0, 2, 0, 0, 0}
	s := &countSink{}
	bufs := make([]*nic.Buf, 1)
	n := testing.AllocsPerRun(200, func() {
		for i, f := range frames {
			bufs[0] = r.pool.Get()
			bufs[0].SetLen(copy(bufs[0].Data(), f))
			process(r.app, s, 0, in[i], bufs, r.now)
			bufs[0].Free()
		}
	})
	if n != 0 {
		t.Fatalf("process allocates %.1f times per round", n)
	}
	if s.copies == 0 || s.drops == 0 || s.sent == 0 {
		t.Fatalf("the round did not flood, send and drop: %+v", s)
	}
}

// TestConcurrentLearning has four threads learn and look up overlapping MACs on their
// own ports at once (run it with -race): every port's count of entries matches the
// entries the table lists on it, and every MAC is in the table once.
func TestConcurrentLearning(t *testing.T) {
	const threads, macs = 4, 500
	var ports []Port
	for i := range threads {
		ports = append(ports, Port{Name: fmt.Sprint("p", i), PVID: 1})
	}
	r := newRig(t, Config{Ports: ports, Threads: threads, TableSize: 4 * macs, CopyBufs: 16})
	var wg sync.WaitGroup
	for ti := range threads {
		pool, err := nic.NewMempool(&nic.HeapDMA{}, 8, 2048)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &countSink{}
			for round := range 5 {
				for m := range macs {
					src := fmt.Sprintf("02:00:00:00:%02x:%02x", m>>8, m&0xff)
					dst := fmt.Sprintf("02:00:00:00:%02x:%02x", (m+1)>>8, (m+1)&0xff)
					bufs := fill(t, pool, [][]byte{testFrame(dst, src, -1, 0, uint16(round))})
					process(r.app, s, ti, dataplane.PortID(ti), bufs, r.now)
					bufs[0].Free()
				}
			}
		}()
	}
	wg.Wait()
	per := make([]int64, threads)
	seen := map[string]int{}
	for _, e := range r.app.Entries() {
		per[e.Port]++
		seen[e.MAC.String()]++
	}
	var total int64
	for p, st := range r.app.Stats() {
		total += st.Entries
		if st.Entries != per[p] {
			t.Errorf("port %d counts %d entries, the table lists %d", p, st.Entries, per[p])
		}
	}
	if len(seen) != macs {
		t.Errorf("%d MACs in the table, want %d", len(seen), macs)
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("%s is in the table %d times", m, n)
		}
	}
	if total != macs {
		t.Errorf("%d entries counted, want %d", total, macs)
	}
}
