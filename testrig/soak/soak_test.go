package soak

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/testrig/modelrig"
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
	// flows is the number of UDP flows a round sends, the probe's.
	flows = modelrig.Flows
	// probeWait bounds the wait for one probe's frames. A probe that does not come out
	// whole within it is sent again (until settle): a later one also carries the refill
	// that sweeps a write-back an RxUnpostedDD fault left behind.
	probeWait = 2 * time.Second
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

// startSoak skips the test unless it is given a duration, checks it for leaks, and
// returns the duration, its random source (seeded as seed says, salted per soak, and
// logged so that the run can be replayed) and the baseline no round may grow.
func startSoak(t *testing.T, what string, salt uint64) (time.Duration, *rand.Rand, baseline) {
	t.Helper()
	d := duration(t)
	if d == 0 {
		t.Skip("soak test: give it a duration with -soak or SOAK_DURATION (make soak)")
	}
	testutil.CheckLeaks(t)
	s := seed(t)
	t.Logf("%s for %v, seed %d (SOAK_SEED=%d replays it)", what, d, s, s)
	return d, rand.New(rand.NewPCG(s, s^salt)), startBaseline()
}

// TestSoak runs rounds of faulted model traffic through the dataplane until its duration
// is up (see the package comment).
func TestSoak(t *testing.T) {
	d, rng, base := startSoak(t, "soak", 0x5eed)
	var total soakTotals
	testutil.Repeat(d, func(round int, left time.Duration) bool {
		length := min(time.Duration(2+rng.IntN(4))*time.Second, left)
		cfg := roundConfig{drv: modelrig.Drivers[rng.IntN(len(modelrig.Drivers))], msix: rng.IntN(2) == 1}
		ok := t.Run(fmt.Sprintf("round%d-%s", round, cfg), func(t *testing.T) {
			runRound(t, cfg, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), length, &total)
		})
		if ok {
			// Nothing may outlive a round.
			base.check(t, round)
		}
		return ok
	})
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
	mode, threads := nic.IRQINTx, 1
	if cfg.msix {
		mode, threads = nic.IRQMSIX, 2
	}
	r := modelrig.New(t, modelrig.Config{Driver: cfg.drv, Queues: queues, Ring: ring, Interrupts: mode,
		TxTimeout: txTimeout, PollThreads: threads})
	var buf [modelrig.FrameLen]byte
	var seqs [flows]uint64 // next sequence number to send per flow
	sent, faults := uint64(0), 0
	dmaFaults := false
	kindsHere := map[string]int{}
	nextFault := 50 + rng.IntN(500)
	testutil.Repeat(length, func(int, time.Duration) bool {
		burst := 1 + rng.IntN(64)
		for i := 0; i < burst; i++ {
			if !testutil.WaitFor(settle, func() bool { return r.Unaccounted(sent) < window }) {
				t.Fatalf("%d frames unaccounted for after %v: %s", r.Unaccounted(sent), settle, r.ProblemText(sent))
			}
			if int(sent) == nextFault {
				in, m := randomFault(rng)
				if err := r.Pair.Models[m].Inject(in); err != nil {
					t.Fatalf("inject %+v into model %d: %v", in, m, err)
				}
				faults++
				kindsHere[in.Kind.String()]++
				dmaFaults = dmaFaults || in.Kind == intel.RxBadDMA || in.Kind == intel.TxBadDMA
				nextFault += 1 + rng.IntN(500)
			}
			f := rng.IntN(flows)
			r.Pair.Far[0].Send(modelrig.FlowFrame(buf[:], f, seqs[f]))
			seqs[f]++
			sent++
		}
		time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
		return true
	})
	// Let the faults end (stalls, held write-backs, link flaps) and the frames arrive.
	if !testutil.WaitFor(settle, func() bool {
		return r.Ports[0].Link().Up && r.Ports[1].Link().Up && r.Settled(sent)
	}) {
		t.Errorf("after %v: links up %v/%v; %s", settle, r.Ports[0].Link().Up, r.Ports[1].Link().Up, r.ProblemText(sent))
	}
	// Traffic flows again on every queue: a probe of one frame per flow (which RSS spreads
	// over all queues) comes out whole once the faults have ended and the driver has reset
	// any TX queue they hung, and every probe finds each flow on the queue the port's RSS
	// key predicts, whatever recoveries the round's faults made the driver run.
	probes := 0
	if !testutil.WaitFor(settle, func() bool {
		probes++
		done, err := r.Probe(&seqs, &sent, probeWait)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			time.Sleep(txTimeout)
		}
		return done
	}) {
		t.Errorf("after %v and %d probes traffic does not flow on every queue: %s", settle, probes, r.ProblemText(sent))
	}
	a := r.Stop(t, sent, kindsHere[intel.RxUnpostedDD.String()] != 0)
	r.Close(t, dmaFaults)
	t.Logf("%v: sent %d, received %d, %d faults %v; model rx lost %d, rx_errors %d, dataplane drops %d, unfetched %d, model tx lost %d, tx timeouts %d (discarded %d), probes %d",
		length.Round(time.Millisecond), a.Sent, a.Received, faults, kindsHere, a.RxLost(), a.RxErrors, a.DPDrops, a.Stuck, a.TxLost(),
		a.TxTimeouts, a.Discarded, probes)
	total.rounds++
	total.sent += a.Sent
	total.received += a.Received
	total.faults += uint64(faults)
	total.txTimeouts += a.TxTimeouts
	if total.kinds == nil {
		total.kinds = map[string]int{}
	}
	for k, n := range kindsHere {
		total.kinds[k] += n
	}
}

// baseline is what a soak holds at its start: no round may leave more behind.
type baseline struct{ goroutines, fds int }

func startBaseline() baseline { return baseline{runtime.NumGoroutine(), testutil.FDs()} }

// check fails the test when round left goroutines (waited out for 5 s) or descriptors.
func (b baseline) check(t *testing.T, round int) {
	t.Helper()
	if !testutil.WaitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= b.goroutines }) {
		t.Fatalf("after round %d: %d goroutines, %d at the start", round, runtime.NumGoroutine(), b.goroutines)
	}
	if fd := testutil.FDs(); fd > b.fds {
		t.Fatalf("after round %d: %d open file descriptors, %d at the start", round, fd, b.fds)
	}
}
