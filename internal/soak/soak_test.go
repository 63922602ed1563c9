package soak

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/modelrig"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

var (
	soakFor  = flag.Duration("soak", 0, "run TestSoak for this long (default: env SOAK_DURATION, else skip)")
	soakSeed = flag.Uint64("seed", 0, "random seed of TestSoak (default: env SOAK_SEED, else from the clock)")
)

const (
	queues = 4
	ring   = 256
	window = 128 // frames unaccounted for at most
	// settle bounds every wait for frames to arrive or faults to end. It only matters
	// when something is wrong: the accounting is exact, never a matter of time.
	settle = time.Minute
	// txTimeout is the ports' TX hang check interval: a hung TX queue is reset within a
	// few of them, so that each round sees faults, recoveries and traffic after them.
	txTimeout = 20 * time.Millisecond
)

// duration is how long the soak runs: -soak, else SOAK_DURATION, else 0 (skip).
func duration(t *testing.T) time.Duration {
	if *soakFor > 0 {
		return *soakFor
	}
	s := os.Getenv("SOAK_DURATION")
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("SOAK_DURATION=%q: not a positive duration", s)
	}
	return d
}

// seed is the run's random seed: -seed, else SOAK_SEED, else the clock.
func seed(t *testing.T) uint64 {
	if *soakSeed != 0 {
		return *soakSeed
	}
	if s := os.Getenv("SOAK_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: not a number", s)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestSoak runs rounds of faulted model traffic through the dataplane until its duration
// is up (see the package comment).
func TestSoak(t *testing.T) {
	d := duration(t)
	if d == 0 {
		t.Skip("soak test: give it a duration with -soak or SOAK_DURATION (make soak)")
	}
	testutil.CheckLeaks(t)
	s := seed(t)
	t.Logf("soak for %v, seed %d (SOAK_SEED=%d replays it)", d, s, s)
	rng := rand.New(rand.NewPCG(s, s^0x5eed))
	end := time.Now().Add(d)
	var total soakTotals
	g0, fd0 := runtime.NumGoroutine(), testutil.FDs()
	for round := 1; time.Now().Before(end); round++ {
		length := min(time.Duration(2+rng.IntN(4))*time.Second, time.Until(end))
		cfg := roundConfig{drv: modelrig.Drivers[rng.IntN(len(modelrig.Drivers))], msix: rng.IntN(2) == 1}
		ok := t.Run(fmt.Sprintf("round%d-%s", round, cfg), func(t *testing.T) {
			runRound(t, cfg, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), length, &total)
		})
		if !ok {
			break
		}
		// Nothing may outlive a round.
		if !testutil.WaitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= g0 }) {
			t.Fatalf("after round %d: %d goroutines, %d at the start", round, runtime.NumGoroutine(), g0)
		}
		if fd := testutil.FDs(); fd > fd0 {
			t.Fatalf("after round %d: %d open file descriptors, %d at the start", round, fd, fd0)
		}
	}
	t.Logf("%d rounds, %d frames sent, %d received, %d faults injected: %v; %d TX queue resets",
		total.rounds, total.sent, total.received, total.faults, total.kinds, total.txTimeouts)
}

// soakTotals sum up the rounds.
type soakTotals struct {
	rounds, sent, received, faults, txTimeouts uint64
	kinds                                      map[string]int
}

// roundConfig is what a round runs on.
type roundConfig struct {
	drv  modelrig.Driver
	msix bool // MSI-X and two poll threads, else INTx and one
}

func (c roundConfig) String() string {
	if c.msix {
		return c.drv.Name + "-msix"
	}
	return c.drv.Name + "-intx"
}

// rig is a round's two modelled ports on one IOMMU and the dataplane forwarding between
// them, queue q of port 0 to queue q of port 1 and back.
type rig struct {
	cfg   roundConfig
	pair  *intel.Pair
	ports [2]nic.Port
	pools [2][]*nic.Mempool
	dp    *dataplane.Dataplane

	mu       sync.Mutex
	next     map[int]uint64
	received uint64
	reorder  uint64
	foreign  uint64
	// stale counts frames of fakeLen bytes that repeat an earlier frame of their flow:
	// an RxUnpostedDD write-back can land on the descriptor at RDT just as the driver
	// posts it, and the driver then takes the fake completion (length fakeLen) over the
	// buffer's previous contents — indistinguishable from a real one, so allowed only in a
	// round that injected RxUnpostedDD.
	stale uint64
}

func newRig(t *testing.T, cfg roundConfig) *rig {
	t.Helper()
	pair, err := intel.NewPair(intel.Config{Strict: true, Flavor: cfg.drv.Flavor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	r := &rig{cfg: cfg, pair: pair, next: map[int]uint64{}}
	mode := nic.IRQINTx
	if cfg.msix {
		mode = nic.IRQMSIX
	}
	for i := range r.ports {
		p, err := nic.Open(pair.Models[i].Device(), cfg.drv.Name, nic.Config{
			RxQueues: queues, TxQueues: queues, RxRing: ring, TxRing: ring, Promiscuous: true, Interrupts: mode,
			TxTimeout: txTimeout,
		})
		if err != nil {
			t.Fatalf("open port %d: %v", i, err)
		}
		r.ports[i] = p
		r.pools[i] = cfg.drv.Pools(p, queues)
		t.Cleanup(func() { p.Close() }) // for a failed round; closing twice is harmless
	}
	pair.Far[1].SetHandler(r.frame)
	nthreads := 1
	if cfg.msix {
		nthreads = 2
	}
	threads := make([]dataplane.Thread, nthreads)
	for q := 0; q < queues; q++ {
		th := &threads[q%nthreads]
		th.CPU = -1
		th.Queues = append(th.Queues,
			dataplane.Queue{Name: fmt.Sprintf("0to1/%d", q), RxPort: r.ports[0], RxQ: q, TxPort: r.ports[1], TxQ: q},
			dataplane.Queue{Name: fmt.Sprintf("1to0/%d", q), RxPort: r.ports[1], RxQ: q, TxPort: r.ports[0], TxQ: q})
	}
	if procs := irq.ProcsFor(nthreads); runtime.GOMAXPROCS(0) < procs {
		old := runtime.GOMAXPROCS(procs)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
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
	r.dp = dp
	t.Cleanup(dp.Stop)
	return r
}

// Frames: IPv4/UDP, 10.0.0.1 → 10.0.0.2:4791, flow f from source port basePort+f, its
// sequence number after the UDP header.
const (
	frameLen = 64
	basePort = 30000
	flows    = 64
	offSeq   = 14 + 20 + 8
	offFlow  = offSeq + 8
)

func flowFrame(buf []byte, f int, seq uint64) []byte {
	b := buf[:frameLen]
	clear(b)
	copy(b[0:6], []byte{2, 0, 0, 0, 0xee, 1})
	copy(b[6:12], []byte{2, 0, 0, 0, 0xff, 0})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], frameLen-14)
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], uint16(basePort+f))
	binary.BigEndian.PutUint16(udp[2:], 4791)
	binary.BigEndian.PutUint16(udp[4:], frameLen-14-20)
	binary.BigEndian.PutUint64(b[offSeq:], seq)
	binary.BigEndian.PutUint32(b[offFlow:], uint32(f))
	return b
}

// frame is port 1's far end: it checks each flow's order.
func (r *rig) frame(b []byte, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(b) < offFlow+4 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
		r.foreign++
		return
	}
	f, seq := int(binary.BigEndian.Uint32(b[offFlow:])), binary.BigEndian.Uint64(b[offSeq:])
	if seq < r.next[f] {
		if len(b) == fakeLen {
			r.stale++
			r.received++
			return
		}
		r.reorder++
	}
	r.next[f] = seq + 1
	r.received++
}

// fakeLen is the length of the completion sim/intel's RxUnpostedDD writes (frameLen is
// longer, so a frame of this length is the fault's).
const fakeLen = 60

// account is where every frame went.
type account struct {
	sent, received uint64
	rx, tx         intel.Stats // models 0 (receiving) and 1 (transmitting)
	rxErrors       uint64      // write-backs port 0's driver refused
	dpRx, dpTx     uint64      // the dataplane's direction 0 → 1
	dpDrops        uint64
	stuck          uint64 // descriptors port 1's TX queues have not fetched
	discarded      uint64 // frames port 1's driver dropped resetting a hung TX queue
	txTimeouts     uint64 // TX queue resets of port 1
}

func (a account) rxLost() uint64 {
	return a.rx.Dropped + a.rx.Missed + a.rx.QueueDrops + a.rx.RxOff + a.rx.BadFrames + a.rx.Filtered +
		a.rx.NoBusMaster + a.rx.DMAFaults
}

func (a account) txLost() uint64 { return a.tx.TxErrors + a.tx.TxLinkDown }

// lost is what the counters say stayed behind, for pacing.
func (a account) lost() uint64 {
	return a.rxLost() + a.rxErrors + a.dpDrops + a.stuck + a.discarded + a.txLost() + a.tx.WireLost
}

// problems returns the links of the chain sent → received that do not hold (see
// dataplane's fault tests, which check the same chain for one fault at a time).
func (a account) problems() []string {
	var p []string
	if a.rx.WireIn != a.sent {
		p = append(p, fmt.Sprintf("sent %d frames, the NIC saw %d", a.sent, a.rx.WireIn))
	}
	if a.rx.WireIn != a.rx.RxFrames+a.rxLost() {
		p = append(p, fmt.Sprintf("the NIC saw %d frames, placed %d and counts %d lost", a.rx.WireIn, a.rx.RxFrames, a.rxLost()))
	}
	if a.rx.RxFrames < a.dpRx || a.rx.RxFrames-a.dpRx > a.rxErrors {
		p = append(p, fmt.Sprintf("the NIC placed %d frames, the dataplane received %d, the driver refused %d",
			a.rx.RxFrames, a.dpRx, a.rxErrors))
	}
	if a.dpRx != a.dpTx+a.dpDrops {
		p = append(p, fmt.Sprintf("the dataplane received %d frames, sent %d, dropped %d", a.dpRx, a.dpTx, a.dpDrops))
	}
	if a.dpTx != a.tx.TxFrames+a.txLost()+a.stuck+a.discarded {
		p = append(p, fmt.Sprintf("the dataplane sent %d frames, the NIC sent %d, counts %d lost, left %d unfetched, the driver discarded %d",
			a.dpTx, a.tx.TxFrames, a.txLost(), a.stuck, a.discarded))
	}
	if a.tx.TxFrames != a.received+a.tx.WireLost {
		p = append(p, fmt.Sprintf("the NIC sent %d frames, %d came out, the wire lost %d", a.tx.TxFrames, a.received, a.tx.WireLost))
	}
	return p
}

// queueRx returns the frames the dataplane took from each RX queue of port 0.
func (r *rig) queueRx() [queues]uint64 {
	var n [queues]uint64
	for _, q := range r.dp.Stats() {
		var i int
		if _, err := fmt.Sscanf(q.Name, "0to1/%d", &i); err == nil {
			n[i] = q.RxPackets
		}
	}
	return n
}

func (r *rig) account(sent uint64) account {
	a := account{sent: sent, rx: r.pair.Models[0].Stats(), tx: r.pair.Models[1].Stats()}
	r.mu.Lock()
	a.received = r.received
	r.mu.Unlock()
	a.rxErrors = r.ports[0].Stats().RxErrors
	st1 := r.ports[1].Stats()
	a.discarded, a.txTimeouts = st1.TxErrors, st1.TxTimeouts // every frame is valid: TxErrors are all discards
	for _, q := range r.dp.Stats() {
		if strings.HasPrefix(q.Name, "0to1") {
			a.dpRx += q.RxPackets
			a.dpTx += q.TxPackets
			a.dpDrops += q.Drops
		}
	}
	bar, _ := r.pair.Models[1].Device().Region(0)
	for q := 0; q < queues; q++ {
		a.stuck += uint64((bar.Read32(r.cfg.drv.TDT(q)) - bar.Read32(r.cfg.drv.TDH(q))) % ring)
	}
	return a
}

// kinds are the faults a round picks from, with the model they go to (1: the
// transmitting one) — LinkFlap goes to either.
var kinds = []struct {
	kind intel.Injected
	tx   bool
}{
	{intel.RxDrop, false}, {intel.RxOversize, false}, {intel.RxBadDMA, false},
	{intel.RxUnpostedDD, false}, {intel.RxStall, false},
	{intel.TxWritebackDelay, true}, {intel.TxWritebackLost, true}, {intel.TxHang, true}, {intel.TxBadDMA, true},
	{intel.Spurious, false}, {intel.Storm, false}, {intel.LinkFlap, false},
}

// randomFault picks a fault: its kind, queue (a queue or AnyQueue), count, delay and
// vector, and the model it goes to. A TX hang or a lost write-back takes its TX queue out
// until the driver's TX timeout resets it.
func randomFault(rng *rand.Rand) (intel.Injection, int) {
	k := kinds[rng.IntN(len(kinds))]
	in := intel.Injection{Kind: k.kind, Queue: rng.IntN(queues + 1), Count: 1 + rng.IntN(4),
		Delay: time.Duration(1+rng.IntN(10)) * time.Millisecond, Vector: rng.IntN(queues)}
	if in.Queue == queues {
		in.Queue = intel.AnyQueue
	}
	switch k.kind {
	case intel.RxUnpostedDD:
		in.Queue = rng.IntN(queues)
	case intel.Storm:
		in.Count = 1 + rng.IntN(100)
	}
	model := 0
	if k.tx || (k.kind == intel.LinkFlap && rng.IntN(2) == 1) {
		model = 1
	}
	return in, model
}

// runRound sends frames in random bursts with random pauses for length, injecting random
// faults, then checks the accounting, the pools and the mappings.
func runRound(t *testing.T, cfg roundConfig, rng *rand.Rand, length time.Duration, total *soakTotals) {
	r := newRig(t, cfg)
	var buf [frameLen]byte
	var seqs [flows]uint64 // next sequence number to send per flow
	sent, faults := uint64(0), 0
	dmaFaults := false
	kindsHere := map[string]int{}
	nextFault := 50 + rng.IntN(500)
	open := func() uint64 { a := r.account(sent); return sent - min(sent, a.received+a.lost()) }
	start := time.Now()
	for end := start.Add(length); time.Now().Before(end); {
		burst := 1 + rng.IntN(64)
		for i := 0; i < burst; i++ {
			if !testutil.WaitFor(settle, func() bool { return open() < window }) {
				t.Fatalf("%d frames unaccounted for after %v: %s", open(), settle, strings.Join(r.account(sent).problems(), "; "))
			}
			if int(sent) == nextFault {
				in, m := randomFault(rng)
				if err := r.pair.Models[m].Inject(in); err != nil {
					t.Fatalf("inject %+v into model %d: %v", in, m, err)
				}
				faults++
				kindsHere[in.Kind.String()]++
				dmaFaults = dmaFaults || in.Kind == intel.RxBadDMA || in.Kind == intel.TxBadDMA
				nextFault += 1 + rng.IntN(500)
			}
			f := rng.IntN(flows)
			r.pair.Far[0].Send(flowFrame(buf[:], f, seqs[f]))
			seqs[f]++
			sent++
		}
		time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
	}
	// Let the faults end (stalls, held write-backs, link flaps) and the frames arrive.
	if !testutil.WaitFor(settle, func() bool {
		return r.ports[0].Link().Up && r.ports[1].Link().Up && len(r.account(sent).problems()) == 0
	}) {
		t.Errorf("after %v: links up %v/%v; %s", settle, r.ports[0].Link().Up, r.ports[1].Link().Up,
			strings.Join(r.account(sent).problems(), "; "))
	}
	// Traffic flows again on every queue: a probe of one frame per flow (which RSS spreads
	// over all queues) comes out whole once the faults have ended and the driver has reset
	// any TX queue they hung.
	probes := 0
	if !testutil.WaitFor(settle, func() bool {
		probes++
		before := r.account(sent)
		rxq := r.queueRx()
		for f := 0; f < flows; f++ {
			r.pair.Far[0].Send(flowFrame(buf[:], f, seqs[f]))
			seqs[f]++
			sent++
		}
		if !testutil.WaitFor(settle, func() bool { return len(r.account(sent).problems()) == 0 }) {
			return false
		}
		after := r.account(sent)
		for q, n := range r.queueRx() {
			if n == rxq[q] && after.lost() == before.lost() {
				t.Fatalf("probe of %d flows: rx queue %d got none of them: the probe does not cover every queue", flows, q)
			}
		}
		if after.received-before.received == flows {
			return true
		}
		time.Sleep(txTimeout)
		return false
	}) {
		t.Errorf("after %v and %d probes traffic does not flow on every queue: %s", settle, probes,
			strings.Join(r.account(sent).problems(), "; "))
	}
	r.dp.Stop()
	a := r.account(sent)
	for _, p := range a.problems() {
		t.Error(p)
	}
	r.mu.Lock()
	if r.reorder != 0 || r.foreign != 0 {
		t.Errorf("%d frames out of their flow's order or twice, %d foreign frames", r.reorder, r.foreign)
	}
	if r.stale != 0 {
		if kindsHere[intel.RxUnpostedDD.String()] == 0 {
			t.Errorf("%d stale %d-byte frames without an RxUnpostedDD fault", r.stale, fakeLen)
		} else {
			t.Logf("%d stale frames: RxUnpostedDD write-backs that raced a refill", r.stale)
		}
	}
	r.mu.Unlock()
	modelrig.CloseAndCheck(t, r.pair, r.ports[:], r.pools[:], dmaFaults)
	t.Logf("%v: sent %d, received %d, %d faults %v; model rx lost %d, rx_errors %d, dataplane drops %d, unfetched %d, model tx lost %d, tx timeouts %d (discarded %d), probes %d",
		length.Round(time.Millisecond), a.sent, a.received, faults, kindsHere, a.rxLost(), a.rxErrors, a.dpDrops, a.stuck, a.txLost(),
		a.txTimeouts, a.discarded, probes)
	total.rounds++
	total.sent += a.sent
	total.received += a.received
	total.faults += uint64(faults)
	total.txTimeouts += a.txTimeouts
	if total.kinds == nil {
		total.kinds = map[string]int{}
	}
	for k, n := range kindsHere {
		total.kinds[k] += n
	}
}
