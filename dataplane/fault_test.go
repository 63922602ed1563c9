package dataplane_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/testrig/modelrig"
)

// Fault tests: every fault the model injects, under INTx, on RSS queue faultQueue of a
// four-queue port, while the dataplane forwards (l2fwd) between two modelled ports. At
// the end every frame sent is accounted for — it came out of the far port, or a counter
// of the model, the driver or the dataplane says where it stayed — every buffer is back in
// its pool once the ports are closed, and nothing panicked.

const (
	faultQueues = 4
	faultQueue  = 2   // the queue faults are injected on
	faultRing   = 256 // descriptors per ring
	faultFrames = 400 // frames per test, round robin over the flows
	faultCount  = 3   // frames, descriptors or interrupts a fault applies to
	faultWindow = 64  // frames in flight at most, well under a ring
)

// faultCase is one injected fault: where it goes (into the receiving model 0, or the
// transmitting model 1) and how the test sees that it happened.
type faultCase struct {
	in intel.Injection
	tx bool // inject into model 1, whose TX queue faultQueue carries RX queue faultQueue's frames
	// frames, if set, replaces faultFrames.
	frames int
	// settled, if set, says when the fault is over (waited for before the dataplane stops).
	settled func(r *faultRig) bool
	check   func(t *testing.T, r *faultRig, a modelrig.Account)
}

// faultCases are every kind of fault the model injects.
var faultCases = []faultCase{
	{in: intel.Injection{Kind: intel.RxDrop, Count: faultCount}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "frames the model dropped", a.Rx.Dropped, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxOversize, Count: faultCount}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "oversize write-backs the driver refused (rx_errors)", a.RxErrors, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxBadDMA, Count: faultCount}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "RX DMA faults", a.Rx.DMAFaults, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxUnpostedDD}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		// The driver must not take the descriptor it never posted: the dataplane
		// received exactly the frames the model placed.
		if a.DPRx != a.Rx.RxFrames {
			t.Errorf("dataplane received %d frames, the model placed %d: it took the unposted descriptor or lost a frame",
				a.DPRx, a.Rx.RxFrames)
		}
	}},
	{in: intel.Injection{Kind: intel.RxStall, Delay: 20 * time.Millisecond}},
	{in: intel.Injection{Kind: intel.TxWritebackDelay, Count: faultCount, Delay: 20 * time.Millisecond}, tx: true,
		check: func(t *testing.T, r *faultRig, a modelrig.Account) {
			// Later write-backs of the queue wait behind the held ones.
			if a.Tx.TxWritebackDelayed < faultCount {
				t.Errorf("delayed TX write-backs: %d, want at least %d", a.Tx.TxWritebackDelayed, faultCount)
			}
		}},
	{in: intel.Injection{Kind: intel.TxWritebackLost, Count: faultCount}, tx: true,
		check: func(t *testing.T, r *faultRig, a modelrig.Account) {
			wantCount(t, "lost TX write-backs", a.Tx.TxWritebackLost, faultCount)
		}},
	// Enough frames that the hung queue's ring fills and refuses the rest.
	{in: intel.Injection{Kind: intel.TxHang}, tx: true, frames: 6 * faultQueues * faultRing, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "hung TX queues", a.Tx.TxHangs, 1)
		if a.Stuck != faultRing-1 || a.DPDrops == 0 {
			t.Errorf("%d frames left in the hung queue, %d refused; want a full ring (%d) and some refused", a.Stuck, a.DPDrops, faultRing-1)
		}
	}},
	{in: intel.Injection{Kind: intel.TxBadDMA, Count: faultCount}, tx: true, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "TX frames not sent for a DMA fault (tx errors)", a.Tx.TxErrors, faultCount)
	}},
	{in: intel.Injection{Kind: intel.Spurious}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "spurious interrupts", a.Rx.Spurious-r.atInject.Rx.Spurious, 1)
	}},
	{in: intel.Injection{Kind: intel.Storm, Count: 50}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "storm interrupts", a.Rx.Spurious-r.atInject.Rx.Spurious, 50)
	}},
	{in: intel.Injection{Kind: intel.LinkFlap, Delay: 5 * time.Millisecond}, settled: func(r *faultRig) bool {
		return r.Pair.Models[0].Stats().LinkChanges-r.atInject.Rx.LinkChanges == 2 && r.Ports[0].Link().Up
	}, check: func(t *testing.T, r *faultRig, a modelrig.Account) {
		wantCount(t, "link changes", a.Rx.LinkChanges-r.atInject.Rx.LinkChanges, 2)
	}},
}

func wantCount(t *testing.T, what string, got uint64, want int) {
	t.Helper()
	if got != uint64(want) {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}

// TestFaultsUnderDataplane injects every model fault under INTx on RSS queue faultQueue
// while the dataplane forwards, for both NIC flavours.
func TestFaultsUnderDataplane(t *testing.T) {
	for _, drv := range modelrig.Drivers {
		for _, fc := range faultCases {
			t.Run(drv.Name+"/"+fc.in.Kind.String(), func(t *testing.T) {
				testutil.CheckLeaks(t)
				r := newFaultRig(t, drv)
				model := r.Pair.Models[0]
				if fc.tx {
					model = r.Pair.Models[1]
				}
				in := fc.in
				in.Queue = faultQueue
				n := faultFrames
				if fc.frames != 0 {
					n = fc.frames
				}
				r.run(t, n, faultFrames/3, func() {
					if err := model.Inject(in); err != nil {
						t.Errorf("inject %v: %v", in.Kind, err)
					}
				})
				if fc.settled != nil && !testutil.WaitFor(10*time.Second, func() bool { return fc.settled(r) }) {
					t.Errorf("%v not over after 10s", in.Kind)
				}
				a := r.stop(t, isDMAFault(in.Kind))
				if fc.check != nil {
					fc.check(t, r, a)
				}
			})
		}
	}
}

func isDMAFault(k intel.Injected) bool { return k == intel.RxBadDMA || k == intel.TxBadDMA }

// faultRig is a modelrig.Rig of one flavour with INTx, faultQueues RSS queues and one poll
// thread. Its TX hang check waits an hour: these tests look at a hung TX queue as the fault
// leaves it (the driver's reset of it is tested by nictest's TxRecovery and the soak). The
// test sends UDP flows into port 0 and receives them from port 1.
type faultRig struct {
	*modelrig.Rig
	flows []int // flow numbers, two per queue
	sent  uint64
	// atInject is the account just before the fault was injected.
	atInject modelrig.Account
}

func newFaultRig(t *testing.T, drv modelrig.Driver) *faultRig {
	t.Helper()
	r := &faultRig{Rig: modelrig.New(t, modelrig.Config{Driver: drv, Queues: faultQueues, Ring: faultRing,
		Interrupts: nic.IRQINTx, TxTimeout: time.Hour, PollThreads: 1})}
	for i, p := range r.Ports {
		if v0, v := p.RxVector(0), p.RxVector(faultQueue); v0 == nil || v != v0 {
			t.Fatalf("port %d: RX queues 0 and %d have vectors %p and %p, want one INTx vector", i, faultQueue, v0, v)
		}
	}
	// Two flows per queue, found by the driver's hash.
	per := map[int]int{}
	for f := 0; len(r.flows) < 2*faultQueues; f++ {
		if q := modelrig.FlowQueue(drv.Key, f, faultQueues); per[q] < 2 {
			per[q]++
			r.flows = append(r.flows, f)
		}
	}
	return r
}

// run sends n frames into port 0, round robin over the flows, with at most faultWindow
// of them unaccounted for, calls inject after the first at of them, and waits until every
// frame is accounted for.
func (r *faultRig) run(t *testing.T, n, at int, inject func()) {
	t.Helper()
	var buf [modelrig.FrameLen]byte
	sent := uint64(0)
	for i := 0; i < n; i++ {
		if i == at {
			r.atInject = r.Account(sent)
			inject()
		}
		if !testutil.WaitFor(10*time.Second, func() bool { return r.Unaccounted(sent) < faultWindow }) {
			t.Fatalf("%d frames unaccounted for after 10s: %+v", r.Unaccounted(sent), r.Account(sent))
		}
		f := r.flows[i%len(r.flows)]
		r.Pair.Far[0].Send(modelrig.FlowFrame(buf[:], f, uint64(i/len(r.flows))))
		sent++
	}
	r.sent = sent
	if !testutil.WaitFor(10*time.Second, func() bool { return r.Settled(sent) }) {
		t.Errorf("frames unaccounted for after 10s: %s", r.ProblemText(sent))
	}
	a := r.Account(sent)
	t.Logf("sent %d, received %d; model rx lost %d (%+v); rx_errors %d; dataplane drops %d; unfetched %d; model tx lost %d",
		a.Sent, a.Received, a.RxLost(), a.Rx, a.RxErrors, a.DPDrops, a.Stuck, a.TxLost())
}

// stop stops the dataplane and checks the accounting and that the fault's queue carried
// traffic and every queue's frames were sent or dropped, then closes the ports and checks
// that every buffer is back in its pool and no DMA mapping is left, and that neither model
// recorded a fault other than the DMA faults dmaOK allows.
func (r *faultRig) stop(t *testing.T, dmaOK bool) modelrig.Account {
	t.Helper()
	a := r.Stop(t, r.sent, false)
	for _, q := range r.DP.Stats() {
		if q.Name == fmt.Sprintf("0to1/%d", faultQueue) && q.RxPackets == 0 {
			t.Errorf("queue %s received nothing: the fault's queue carried no traffic", q.Name)
		}
		if q.RxPackets != q.TxPackets+q.Drops {
			t.Errorf("queue %s: received %d, sent %d, dropped %d", q.Name, q.RxPackets, q.TxPackets, q.Drops)
		}
	}
	r.Close(t, dmaOK)
	return a
}
