package dataplane

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/modelrig"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
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
	check   func(t *testing.T, r *faultRig, a faultAccount)
}

// faultCases are every kind of fault the model injects.
var faultCases = []faultCase{
	{in: intel.Injection{Kind: intel.RxDrop, Count: faultCount}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "frames the model dropped", a.rx.Dropped, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxOversize, Count: faultCount}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "oversize write-backs the driver refused (rx_errors)", a.rxErrors, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxBadDMA, Count: faultCount}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "RX DMA faults", a.rx.DMAFaults, faultCount)
	}},
	{in: intel.Injection{Kind: intel.RxUnpostedDD}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		// The driver must not take the descriptor it never posted: the dataplane
		// received exactly the frames the model placed.
		if a.dpRx != a.rx.RxFrames {
			t.Errorf("dataplane received %d frames, the model placed %d: it took the unposted descriptor or lost a frame",
				a.dpRx, a.rx.RxFrames)
		}
	}},
	{in: intel.Injection{Kind: intel.RxStall, Delay: 20 * time.Millisecond}},
	{in: intel.Injection{Kind: intel.TxWritebackDelay, Count: faultCount, Delay: 20 * time.Millisecond}, tx: true,
		check: func(t *testing.T, r *faultRig, a faultAccount) {
			// Later write-backs of the queue wait behind the held ones.
			if a.tx.TxWritebackDelayed < faultCount {
				t.Errorf("delayed TX write-backs: %d, want at least %d", a.tx.TxWritebackDelayed, faultCount)
			}
		}},
	{in: intel.Injection{Kind: intel.TxWritebackLost, Count: faultCount}, tx: true,
		check: func(t *testing.T, r *faultRig, a faultAccount) {
			wantCount(t, "lost TX write-backs", a.tx.TxWritebackLost, faultCount)
		}},
	// Enough frames that the hung queue's ring fills and refuses the rest.
	{in: intel.Injection{Kind: intel.TxHang}, tx: true, frames: 6 * faultQueues * faultRing, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "hung TX queues", a.tx.TxHangs, 1)
		if a.stuck != faultRing-1 || a.dpDrops == 0 {
			t.Errorf("%d frames left in the hung queue, %d refused; want a full ring (%d) and some refused", a.stuck, a.dpDrops, faultRing-1)
		}
	}},
	{in: intel.Injection{Kind: intel.TxBadDMA, Count: faultCount}, tx: true, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "TX frames not sent for a DMA fault (tx errors)", a.tx.TxErrors, faultCount)
	}},
	{in: intel.Injection{Kind: intel.Spurious}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "spurious interrupts", a.rx.Spurious-r.atInject.rx.Spurious, 1)
	}},
	{in: intel.Injection{Kind: intel.Storm, Count: 50}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "storm interrupts", a.rx.Spurious-r.atInject.rx.Spurious, 50)
	}},
	{in: intel.Injection{Kind: intel.LinkFlap, Delay: 5 * time.Millisecond}, settled: func(r *faultRig) bool {
		return r.pair.Models[0].Stats().LinkChanges-r.atInject.rx.LinkChanges == 2 && r.ports[0].Link().Up
	}, check: func(t *testing.T, r *faultRig, a faultAccount) {
		wantCount(t, "link changes", a.rx.LinkChanges-r.atInject.rx.LinkChanges, 2)
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
				model := r.pair.Models[0]
				if fc.tx {
					model = r.pair.Models[1]
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

// faultRig is two modelled ports of one flavour on one IOMMU, opened by their driver with
// INTx and faultQueues RSS queues, and a dataplane thread forwarding between them queue by
// queue. The test sends UDP flows into port 0 and receives them from port 1.
type faultRig struct {
	drv   modelrig.Driver
	pair  *intel.Pair
	ports [2]nic.Port
	pools [2][]*nic.Mempool
	dp    *Dataplane
	flows []int // flow numbers, two per queue
	sent  uint64
	// atInject is the account just before the fault was injected.
	atInject faultAccount

	mu       sync.Mutex
	next     map[int]uint64 // next sequence number expected per flow
	received uint64
	reorder  uint64 // frames after a later frame of their flow (or a duplicate)
	foreign  uint64
}

// faultAccount is where every frame went.
type faultAccount struct {
	sent, received uint64
	rx, tx         intel.Stats // models 0 (receiving) and 1 (transmitting)
	rxErrors       uint64      // write-backs the driver of port 0 refused
	dpRx, dpTx     uint64      // the dataplane's direction 0 → 1: received, accepted by TX
	dpDrops        uint64      // refused by a full TX ring
	stuck          uint64      // descriptors port 1's TX queues never fetched
}

// rxLost is what the receiving model counts as not placed in a ring.
func (a faultAccount) rxLost() uint64 {
	return a.rx.Dropped + a.rx.Missed + a.rx.QueueDrops + a.rx.RxOff + a.rx.BadFrames + a.rx.Filtered +
		a.rx.NoBusMaster + a.rx.DMAFaults // an RX DMA fault loses the frame
}

// txLost is what the transmitting model counts as taken from a ring but not sent.
func (a faultAccount) txLost() uint64 { return a.tx.TxErrors + a.tx.TxLinkDown }

// lost is every frame the counters say stayed behind, for pacing (it may count a refused
// write-back that was no frame).
func (a faultAccount) lost() uint64 {
	return a.rxLost() + a.rxErrors + a.dpDrops + a.stuck + a.txLost() + a.tx.WireLost
}

// problems returns the links of the chain sent → received that do not hold: every frame
// reached the NIC; was placed in a ring or counted by the model; was handed to the
// dataplane or refused (and counted) by the driver; was accepted by a TX ring or dropped
// (and counted) by the dataplane; was sent, counted by the model or left unfetched in a
// hung queue; and came out of the wire or was counted by it. None holds while frames are
// still on their way, so waiting for none is waiting for the end.
func (a faultAccount) problems() []string {
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
	if a.dpTx != a.tx.TxFrames+a.txLost()+a.stuck {
		p = append(p, fmt.Sprintf("the dataplane sent %d frames, the NIC sent %d, counts %d lost, left %d unfetched",
			a.dpTx, a.tx.TxFrames, a.txLost(), a.stuck))
	}
	if a.tx.TxFrames != a.received+a.tx.WireLost {
		p = append(p, fmt.Sprintf("the NIC sent %d frames, %d came out, the wire lost %d", a.tx.TxFrames, a.received, a.tx.WireLost))
	}
	return p
}

func newFaultRig(t *testing.T, drv modelrig.Driver) *faultRig {
	t.Helper()
	pair, err := intel.NewPair(intel.Config{Strict: true, Flavor: drv.Flavor})
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRig{drv: drv, pair: pair, next: map[int]uint64{}}
	t.Cleanup(func() { pair.Close() })
	for i := range r.ports {
		p, err := nic.Open(pair.Models[i].Device(), drv.Name, nic.Config{
			RxQueues: faultQueues, TxQueues: faultQueues, RxRing: faultRing, TxRing: faultRing,
			Promiscuous: true, Interrupts: nic.IRQINTx,
			// These tests look at a hung TX queue as the fault leaves it; the driver's
			// reset of it is tested by nictest's TxRecovery and the soak.
			TxTimeout: time.Hour,
		})
		if err != nil {
			t.Fatalf("open port %d: %v", i, err)
		}
		r.ports[i] = p
		r.pools[i] = drv.Pools(p, faultQueues)
		if v0, v := p.RxVector(0), p.RxVector(faultQueue); v0 == nil || v != v0 {
			t.Fatalf("port %d: RX queues 0 and %d have vectors %p and %p, want one INTx vector", i, faultQueue, v0, v)
		}
	}
	pair.Far[1].SetHandler(r.frame)
	// Two flows per queue, found by the driver's hash.
	per := map[int]int{}
	for f := 0; len(r.flows) < 2*faultQueues; f++ {
		if q := r.flowQueue(f); per[q] < 2 {
			per[q]++
			r.flows = append(r.flows, f)
		}
	}
	var queues []Queue
	for q := 0; q < faultQueues; q++ {
		queues = append(queues,
			Queue{Name: fmt.Sprintf("0to1/%d", q), RxPort: r.ports[0], RxQ: q, TxPort: r.ports[1], TxQ: q},
			Queue{Name: fmt.Sprintf("1to0/%d", q), RxPort: r.ports[1], RxQ: q, TxPort: r.ports[0], TxQ: q})
	}
	dp, err := New(Config{Policy: idle.PolicyConfig{IdleThreshold: 20 * time.Microsecond, WaitTimeout: 50 * time.Millisecond},
		Threads: []Thread{{CPU: -1, Queues: queues}}})
	if err != nil {
		t.Fatal(err)
	}
	r.dp = dp
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// UDP flows: flow f has source port faultBasePort+f.
const (
	faultBasePort = 20000
	faultOffSeq   = 14 + 20 + 8
	faultOffFlow  = faultOffSeq + 8
)

// flowQueue is the RX queue RSS sends flow f to: the driver's key, its redirection table
// (entry i → queue i mod n) indexed by the hash's low 7 bits.
func (r *faultRig) flowQueue(f int) int {
	in := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0x12, 0xb7}
	binary.BigEndian.PutUint16(in[8:], uint16(faultBasePort+f))
	return int(intel.Toeplitz(r.drv.Key, in)&127) % faultQueues
}

// flowFrame builds frame seq of flow f: IPv4/UDP, 10.0.0.1 → 10.0.0.2, port 4791.
func flowFrame(buf []byte, f int, seq uint64) []byte {
	b := buf[:frameLen]
	clear(b)
	copy(b[0:6], []byte{2, 0, 0, 0, 0xee, 1})
	copy(b[6:12], []byte{2, 0, 0, 0, 0xff, 0})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(frameLen-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], uint16(faultBasePort+f))
	binary.BigEndian.PutUint16(udp[2:], 4791)
	binary.BigEndian.PutUint16(udp[4:], uint16(frameLen-14-20))
	binary.BigEndian.PutUint64(b[faultOffSeq:], seq)
	binary.BigEndian.PutUint32(b[faultOffFlow:], uint32(f))
	return b
}

// frame is the far end of port 1: it checks each flow's order.
func (r *faultRig) frame(b []byte, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(b) < faultOffFlow+4 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
		r.foreign++
		return
	}
	f, seq := int(binary.BigEndian.Uint32(b[faultOffFlow:])), binary.BigEndian.Uint64(b[faultOffSeq:])
	if seq < r.next[f] {
		r.reorder++
	}
	r.next[f] = seq + 1
	r.received++
}

// account reads every counter.
func (r *faultRig) account(sent uint64) faultAccount {
	a := faultAccount{sent: sent, rx: r.pair.Models[0].Stats(), tx: r.pair.Models[1].Stats()}
	r.mu.Lock()
	a.received = r.received
	r.mu.Unlock()
	a.rxErrors = r.ports[0].Stats().RxErrors
	for _, q := range r.dp.Stats() {
		if strings.HasPrefix(q.Name, "0to1") {
			a.dpRx += q.RxPackets
			a.dpTx += q.TxPackets
			a.dpDrops += q.Drops
		}
	}
	bar, _ := r.pair.Models[1].Device().Region(0)
	for q := 0; q < faultQueues; q++ {
		a.stuck += uint64((bar.Read32(r.drv.TDT(q)) - bar.Read32(r.drv.TDH(q))) % faultRing)
	}
	return a
}

// run sends n frames into port 0, round robin over the flows, with at most faultWindow
// of them unaccounted for, calls inject after the first at of them, and waits until every
// frame is accounted for.
func (r *faultRig) run(t *testing.T, n, at int, inject func()) {
	t.Helper()
	var buf [frameLen]byte
	sent := uint64(0)
	open := func() uint64 { a := r.account(sent); return sent - min(sent, a.received+a.lost()) }
	for i := 0; i < n; i++ {
		if i == at {
			r.atInject = r.account(sent)
			inject()
		}
		if !testutil.WaitFor(10*time.Second, func() bool { return open() < faultWindow }) {
			t.Fatalf("%d frames unaccounted for after 10s: %+v", open(), r.account(sent))
		}
		f := r.flows[i%len(r.flows)]
		r.pair.Far[0].Send(flowFrame(buf[:], f, uint64(i/len(r.flows))))
		sent++
	}
	r.sent = sent
	if !testutil.WaitFor(10*time.Second, func() bool { return len(r.account(sent).problems()) == 0 }) {
		t.Errorf("frames unaccounted for after 10s: %s", strings.Join(r.account(sent).problems(), "; "))
	}
	a := r.account(sent)
	t.Logf("sent %d, received %d; model rx lost %d (%+v); rx_errors %d; dataplane drops %d; unfetched %d; model tx lost %d",
		a.sent, a.received, a.rxLost(), a.rx, a.rxErrors, a.dpDrops, a.stuck, a.txLost())
}

// stop stops the dataplane and checks the accounting, then closes the ports and checks
// that every buffer is back in its pool and no DMA mapping is left, and that neither model
// recorded a fault other than the DMA faults dmaOK allows.
func (r *faultRig) stop(t *testing.T, dmaOK bool) faultAccount {
	t.Helper()
	r.dp.Stop()
	a := r.account(r.sent)
	for _, p := range a.problems() {
		t.Error(p)
	}
	r.mu.Lock()
	if r.reorder != 0 || r.foreign != 0 {
		t.Errorf("%d frames out of their flow's order or twice, %d foreign frames", r.reorder, r.foreign)
	}
	r.mu.Unlock()
	for _, q := range r.dp.Stats() {
		if q.Name == fmt.Sprintf("0to1/%d", faultQueue) && q.RxPackets == 0 {
			t.Errorf("queue %s received nothing: the fault's queue carried no traffic", q.Name)
		}
		if q.RxPackets != q.TxPackets+q.Drops {
			t.Errorf("queue %s: received %d, sent %d, dropped %d", q.Name, q.RxPackets, q.TxPackets, q.Drops)
		}
	}
	modelrig.CloseAndCheck(t, r.pair, r.ports[:], r.pools[:], dmaOK)
	return a
}
