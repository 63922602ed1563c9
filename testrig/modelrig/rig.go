package modelrig

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// Config is what a Rig runs on.
type Config struct {
	Driver      Driver
	Queues      int // RSS queues per port, RX and TX
	Ring        int // descriptors per ring
	Interrupts  nic.IRQMode
	TxTimeout   time.Duration // the ports' TX hang check interval
	PollThreads int           // dataplane threads; queue q goes to thread q mod PollThreads
}

// Rig is two modelled ports of one flavour on one IOMMU, opened by their driver, and a
// started dataplane forwarding between them (l2fwd), queue q of port 0 to queue q of
// port 1 ("0to1/q") and back ("1to0/q"). The test sends flow frames into port 0 on
// Pair.Far[0]; the rig receives them from port 1 and checks each flow's order.
type Rig struct {
	cfg   Config
	Pair  *sim.Pair[*intel.Model]
	Ports [2]nic.Port
	Pools [2][]*nic.Mempool // the ports' buffer pools, for Close's check
	DP    *dataplane.Dataplane
	gate  *gate // port 0 as the dataplane sees it (HoldRx)

	mu       sync.Mutex
	next     map[int]uint64 // next sequence number expected per flow
	received uint64
	reorder  uint64 // frames after a later frame of their flow (or a duplicate)
	foreign  uint64 // frames that are no flow frame
	stale    uint64 // RxUnpostedDD completions over a buffer's previous frame (see frame)
}

// New opens the rig's ports and starts its dataplane (idle threshold 20 µs, wait timeout
// 50 ms); cleanups stop and close whatever a failed test leaves open.
func New(t testing.TB, cfg Config) *Rig {
	t.Helper()
	pair, err := intel.NewPair(intel.Config{Strict: true, Flavor: cfg.Driver.Flavor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	r := &Rig{cfg: cfg, Pair: pair, next: map[int]uint64{}}
	for i := range r.Ports {
		p, err := nic.Open(pair.Models[i].PCI(), cfg.Driver.Name, nic.Config{
			RxQueues: cfg.Queues, TxQueues: cfg.Queues, RxRing: cfg.Ring, TxRing: cfg.Ring,
			Promiscuous: true, Interrupts: cfg.Interrupts, TxTimeout: cfg.TxTimeout,
		})
		if err != nil {
			t.Fatalf("open port %d: %v", i, err)
		}
		r.Ports[i] = p
		r.Pools[i] = cfg.Driver.Pools(p)
		t.Cleanup(func() { p.Close() }) // for a failed test; closing twice is harmless
	}
	pair.Far[1].SetHandler(r.frame)
	r.gate = &gate{Port: r.Ports[0]}
	threads := make([]dataplane.Thread, cfg.PollThreads)
	for q := 0; q < cfg.Queues; q++ {
		th := &threads[q%cfg.PollThreads]
		th.CPU = -1
		th.Queues = append(th.Queues,
			dataplane.Queue{Name: fmt.Sprintf("0to1/%d", q), RxPort: r.gate, RxQ: q, TxPort: r.Ports[1], TxQ: q},
			dataplane.Queue{Name: fmt.Sprintf("1to0/%d", q), RxPort: r.Ports[1], RxQ: q, TxPort: r.gate, TxQ: q})
	}
	dp, err := dataplane.New(dataplane.Config{
		Policy:  idle.PolicyConfig{IdleThreshold: 20 * time.Microsecond, WaitTimeout: 50 * time.Millisecond},
		Threads: threads,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	r.DP = dp
	t.Cleanup(dp.Stop)
	return r
}

// QueueRx returns the frames the dataplane took from each RX queue of port 0.
func (r *Rig) QueueRx() []uint64 {
	n := make([]uint64, r.cfg.Queues)
	for _, q := range r.DP.Stats() {
		var i int
		if _, err := fmt.Sscanf(q.Name, "0to1/%d", &i); err == nil {
			n[i] = q.RxPackets
		}
	}
	return n
}

// Stop stops the dataplane and checks the account of sent frames and every flow's order:
// a stale RxUnpostedDD completion is logged when staleOK (the test injected that fault),
// else an error. It returns the account.
func (r *Rig) Stop(t testing.TB, sent uint64, staleOK bool) Account {
	t.Helper()
	r.DP.Stop()
	a := r.Account(sent)
	for _, p := range a.Problems() {
		t.Error(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reorder != 0 || r.foreign != 0 {
		t.Errorf("%d frames out of their flow's order or twice, %d foreign frames", r.reorder, r.foreign)
	}
	if r.stale != 0 {
		if !staleOK {
			t.Errorf("%d stale %d-byte frames without an RxUnpostedDD fault", r.stale, fakeLen)
		} else {
			t.Logf("%d stale frames: RxUnpostedDD write-backs that raced a refill", r.stale)
		}
	}
	return a
}

// Close closes the ports and checks what closing must leave (see CloseAndCheck).
func (r *Rig) Close(t testing.TB, dmaOK bool) {
	t.Helper()
	CloseAndCheck(t, r.Pair, r.Ports[:], r.Pools[:], dmaOK)
}
