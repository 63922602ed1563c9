package nictest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

// rssFlows is the fixed flow set of RSSAfterRecovery: UDP 10.0.0.1:rssPort+i →
// 10.0.0.2:4791, i < rssFlows.
const (
	rssFlows = 32
	rssPort  = 40000
)

// recovery is one recovery the driver performs, provoked on queue q (RX or TX); f is a
// flow of the set that RSS sends to RX queue q.
type recovery struct {
	name     string
	faultsOK bool // the fault leaves the strict model's error set
	run      func(t *testing.T, h *Harness, q, f int)
}

// recoveries are every recovery path of the Intel drivers: the TX queue reset after a
// hang and after a lost write-back, a link flap handled (LSC), and the RX error paths: a
// refused write-back, a fake completion on an unposted descriptor, a DMA fault, a stall.
var recoveries = []recovery{
	{name: "tx-hang", run: func(t *testing.T, h *Harness, q, _ int) { txReset(t, h, intel.TxHang, q) }},
	{name: "tx-writeback-lost", run: func(t *testing.T, h *Harness, q, _ int) { txReset(t, h, intel.TxWritebackLost, q) }},
	{name: "link-flap", run: func(t *testing.T, h *Harness, q, _ int) {
		before := h.Port.LinkChanges()
		h.Intel().FlapLink(5 * time.Millisecond)
		testutil.Eventually(t, 5*time.Second, func() bool {
			h.Port.EnableRxInterrupt(q) // under INTx, reads the shared cause
			return h.Port.LinkChanges() >= before+2 && h.Port.Link().Up
		}, "link flap: %d link changes handled, want 2, link %+v", h.Port.LinkChanges()-before, h.Port.Link())
		h.Port.DisableRxInterrupt(q)
	}},
	{name: "rx-oversize", run: func(t *testing.T, h *Harness, q, f int) {
		rxError(t, h, q, f, intel.Injection{Kind: intel.RxOversize, Queue: q}, 0, 1)
	}},
	{name: "rx-unposted-dd", run: func(t *testing.T, h *Harness, q, f int) {
		rxError(t, h, q, f, intel.Injection{Kind: intel.RxUnpostedDD, Queue: q}, 1, 1)
	}},
	{name: "rx-bad-dma", faultsOK: true, run: func(t *testing.T, h *Harness, q, f int) {
		before := h.Intel().Stats().DMAFaults
		rxError(t, h, q, f, intel.Injection{Kind: intel.RxBadDMA, Queue: q}, 0, 0)
		if h.Intel().Stats().DMAFaults == before {
			t.Error("rx-bad-dma: no DMA fault")
		}
	}},
	{name: "rx-stall", run: func(t *testing.T, h *Harness, q, f int) {
		rxError(t, h, q, f, intel.Injection{Kind: intel.RxStall, Delay: 5 * time.Millisecond}, 1, 0)
	}},
}

// RSSAfterRecovery checks that the RSS state a port was opened with is still in force
// after every recovery the driver performs (recoveries), under MSI-X and INTx, provoked on
// queue 0 and on queue 2 of four: each flow of a fixed set reaches the RX queue the
// Toeplitz hash of the driver's key (drv.RSSKey) sends it to through a redirection table
// filled round-robin, before the recovery and after it, and the key, table and MRQC
// registers read what they read after the open. Intel only.
func RSSAfterRecovery(t *testing.T, drv Driver) {
	const queues = 4
	if drv.RSSKey == nil {
		t.Fatal("the driver declares no RSS key")
	}
	want := make([]int, rssFlows)
	covered := make([]bool, queues)
	for f := range want {
		want[f] = rssQueue(drv.RSSKey, f, queues)
		covered[want[f]] = true
	}
	for q, ok := range covered {
		if !ok {
			t.Fatalf("no flow of the set hashes to queue %d: the check would not cover it", q)
		}
	}
	for _, rec := range recoveries {
		for _, mode := range []nic.IRQMode{nic.IRQMSIX, nic.IRQINTx} {
			for _, q := range []int{0, 2} {
				t.Run(fmt.Sprintf("%s/%v/queue%d", rec.name, mode, q), func(t *testing.T) {
					h := New(t, drv, nic.Config{RxQueues: queues, TxQueues: queues, RxRing: 64, TxRing: 16,
						Interrupts: mode, TxTimeout: 10 * time.Millisecond})
					h.FaultsOK = rec.faultsOK
					regs := rssRegs(h)
					checkRSS(t, h, want, "after the open")
					f := 0
					for want[f] != q {
						f++
					}
					rec.run(t, h, q, f)
					checkRSS(t, h, want, "after "+rec.name)
					if now := rssRegs(h); now != regs {
						t.Errorf("after %s the RSS registers changed: %s", rec.name, regs.diff(now))
					}
				})
			}
		}
	}
}

// rssQueue is the queue flow f of the set reaches: RETA entry hash mod 128, the entries
// filled with the queue numbers round-robin.
func rssQueue(key []byte, f, queues int) int {
	in := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0x12, 0xb7}
	binary.BigEndian.PutUint16(in[8:], uint16(rssPort+f))
	return int(intel.Toeplitz(key, in)&127) % queues
}

// checkRSS sends one frame of each flow of the set and checks that it, and nothing
// else, arrived on the flow's queue want[f].
func checkRSS(t *testing.T, h *Harness, want []int, when string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	bufs := make([]*nic.Buf, 8)
	for f, wq := range want {
		if err := h.Peer.Send(Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, uint16(rssPort+f), 4791, 64)); err != nil {
			t.Fatal(err)
		}
		got := make([]int, h.Port.NumRxQueues())
		for q := range got {
			n := h.Port.RxBurst(q, bufs)
			for _, b := range bufs[:n] {
				b.Free()
			}
			got[q] = n
		}
		if got[wq] != 1 || sumInts(got) != 1 {
			t.Fatalf("%s: flow %d (source port %d) arrived %v per queue, want one frame on queue %d (model %+v)",
				when, f, rssPort+f, got, wq, h.Intel().Stats())
		}
	}
}

func sumInts(n []int) int {
	s := 0
	for _, v := range n {
		s += v
	}
	return s
}

// txReset hangs TX queue q with fault (TxHang or TxWritebackLost) under a few queued
// frames and waits for the driver to reset the queue.
func txReset(t *testing.T, h *Harness, fault intel.Injected, q int) {
	t.Helper()
	if err := h.Intel().Inject(intel.Injection{Kind: fault, Queue: q}); err != nil {
		t.Fatal(err)
	}
	before := h.Port.Stats().TxTimeouts
	if k := sendTx(h, q, 3, rand.New(rand.NewPCG(3, uint64(q)))); k != 3 {
		t.Fatalf("queued %d of 3 frames", k)
	}
	awaitTxReset(t, h, q, before)
	testutil.Eventually(t, 5*time.Second, func() bool { h.Port.TxBurst(q, nil); return Rings(h.Port).TxQueue(q).InFlight() == 0 },
		"tx queue %d: frames in flight after the reset", q)
}

// rxError injects in, sends a frame of flow f (RSS sends it to RX queue q) and receives
// on q until wantRx frames came and the port counted wantErrs more receive errors.
func rxError(t *testing.T, h *Harness, q, f int, in intel.Injection, wantRx int, wantErrs uint64) {
	t.Helper()
	before := h.Port.Stats().RxErrors
	if err := h.Intel().Inject(in); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, uint64(q)))
	if err := h.Peer.Send(Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, uint16(rssPort+f), 4791, 64)); err != nil {
		t.Fatal(err)
	}
	got := 0
	testutil.Eventually(t, 5*time.Second, func() bool {
		got += h.Consume(q)
		return got == wantRx && h.Port.Stats().RxErrors == before+wantErrs
	}, "%v on queue %d: %d frames received, want %d; %d receive errors, want %d", in.Kind, q, got, wantRx, h.Port.Stats().RxErrors-before, wantErrs)
	if got > wantRx {
		t.Errorf("%v on queue %d: %d frames received, want %d", in.Kind, q, got, wantRx)
	}
}

// rssState is the RSS registers: MRQC, RXCSUM, the redirection table and the key.
type rssState struct {
	mrqc, rxcsum uint32
	reta         [32]uint32
	key          [10]uint32
}

func rssRegs(h *Harness) rssState {
	bar, _ := h.Intel().Device().Region(0)
	s := rssState{mrqc: bar.Read32(intelnic.MRQC), rxcsum: bar.Read32(intelnic.RXCSUM)}
	for i := range s.reta {
		s.reta[i] = bar.Read32(intelnic.RETA + 4*uint32(i))
	}
	for i := range s.key {
		s.key[i] = bar.Read32(intelnic.RSSRK + 4*uint32(i))
	}
	return s
}

// diff names the registers that differ between s and now.
func (s rssState) diff(now rssState) string {
	d := ""
	add := func(name string, a, b uint32) {
		if a != b {
			d += fmt.Sprintf(" %s 0x%08x → 0x%08x", name, a, b)
		}
	}
	add("MRQC", s.mrqc, now.mrqc)
	add("RXCSUM", s.rxcsum, now.rxcsum)
	for i := range s.reta {
		add(fmt.Sprintf("RETA[%d]", i), s.reta[i], now.reta[i])
	}
	for i := range s.key {
		add(fmt.Sprintf("RSSRK[%d]", i), s.key[i], now.key[i])
	}
	return d
}
