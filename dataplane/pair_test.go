package dataplane

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"golang.org/x/sys/unix"
)

// recorder collects, on the polling thread, the latency of every frame sent.
type recorder struct {
	lat   []int64 // by sequence number; 0 = not seen
	dups  atomic.Int64
	count atomic.Int64
	port  []int // port index that sent it
}

func newRecorder(n int) *recorder {
	return &recorder{lat: make([]int64, n), port: make([]int, n)}
}

func (r *recorder) hook(port int) func(q int, b *nic.Buf) {
	return func(q int, b *nic.Buf) {
		now := idle.Now()
		seq := frameSeq(b.Bytes())
		if seq >= uint64(len(r.lat)) {
			return
		}
		if r.lat[seq] != 0 {
			r.dups.Add(1)
		}
		r.lat[seq] = max(1, now-frameTime(b.Bytes()))
		r.port[seq] = port
		r.count.Add(1)
	}
}

// waitFor polls cond until it is true or a generous deadline passes (a hang guard, not a
// timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testutil.WaitFor(60*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func sumStats(qs []QueueStats) (s QueueStats) {
	for _, q := range qs {
		s.RxPackets += q.RxPackets
		s.RxBytes += q.RxBytes
		s.TxPackets += q.TxPackets
		s.Drops += q.Drops
		s.Polls += q.Polls
		s.EmptyPolls += q.EmptyPolls
	}
	return s
}

// busyAndSleeping are the two policies a test of the running threads goes through: busy
// polling, and adaptive sleeping at once for the longest wait (so only a wake-up ends it).
var busyAndSleeping = []idle.PolicyConfig{
	{Mode: idle.Busy},
	{Mode: idle.Adaptive, IdleThreshold: time.Nanosecond, WaitTimeout: time.Second},
}

// newCrossed is an unstarted l2fwd dataplane under pol over a and b, each port's queue 0
// polled by a thread of its own and sent to the other; it is stopped at cleanup.
func newCrossed(t *testing.T, pol idle.PolicyConfig, a, b nic.Port) *Dataplane {
	t.Helper()
	dp, err := New(Config{App: L2Fwd, Policy: pol, Threads: []Thread{
		{CPU: -1, Queues: []Queue{{Name: "a", RxPort: a, TxPort: b}}},
		{CPU: -1, Queues: []Queue{{Name: "b", RxPort: b, TxPort: a}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Stop)
	return dp
}

// paceRandomGaps sends frames 0 to n-1 with send, from a locked pacer (lockPacer), with
// gaps uniform in [0, 2×threshold] after each: about half the frames find an adaptive
// thread of that threshold polling, half find it asleep or on its way there. send and the
// gaps draw from one generator, seeded with (seed, seed+1).
func paceRandomGaps(t *testing.T, n int, threshold time.Duration, seed uint64, send func(i int, rng *rand.Rand)) {
	lockPacer(t)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := range n {
		send(i, rng)
		pause(time.Duration(rng.Int64N(int64(2 * threshold))))
	}
}

// pacer sleeps between injections on a locked thread with a 1 ns timer slack.
func lockPacer(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

func pause(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}

// pair is two fake ports forwarded into each other by one thread (l2fwd) or each
// reflected by it.
type pair struct {
	dma  *goDMA
	a, b *fakePort
	rec  *recorder
	dp   *Dataplane
}

func newPair(t *testing.T, app App, policy idle.PolicyConfig, frames int) *pair {
	t.Helper()
	p := &pair{dma: &goDMA{}, rec: newRecorder(frames)}
	p.a = newFakePort(t, p.dma, 1, 1, true)
	p.b = newFakePort(t, p.dma, 1, 1, true)
	p.a.onTx, p.b.onTx = p.rec.hook(0), p.rec.hook(1)
	qs := []Queue{{Name: "a", RxPort: p.a, TxPort: p.b}, {Name: "b", RxPort: p.b, TxPort: p.a}}
	if app == Reflect {
		qs = []Queue{{Name: "a", RxPort: p.a}, {Name: "b", RxPort: p.b}}
	}
	dp, err := New(Config{App: app, Policy: policy, Threads: []Thread{{CPU: -1, Queues: qs}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Stop)
	p.dp = dp
	return p
}

// checkClean stops the dataplane and checks that no buffer leaked.
func (p *pair) checkClean(t *testing.T) {
	t.Helper()
	p.dp.Stop()
	for i, port := range []*fakePort{p.a, p.b} {
		if n := port.leaked(); n != 0 {
			t.Errorf("port %d: %d buffers leaked", i, n)
		}
		if err := port.Close(); err != nil {
			t.Errorf("port %d: %v", i, err)
		}
	}
}

// checkLatencies fails the test if a frame of lat (latencies by sequence number, 0: never
// seen) was lost or waited a full wait_timeout (one second in these tests), and returns the
// worst latency.
func checkLatencies(t *testing.T, lat []int64) time.Duration {
	t.Helper()
	var worst int64
	for seq, l := range lat {
		if l == 0 {
			t.Fatalf("frame %d lost", seq)
		}
		worst = max(worst, l)
	}
	if time.Duration(worst) >= time.Second {
		t.Fatalf("a frame waited %v, a full wait_timeout", time.Duration(worst))
	}
	return time.Duration(worst)
}

// wokeByInterrupt fails the test unless the thread's sleeps ended by interrupt, never by
// the wait timeout.
func wokeByInterrupt(t *testing.T, th ThreadStats) {
	t.Helper()
	if th.Idle.WakeTimeout != 0 || th.Idle.WakeInterrupt == 0 {
		t.Fatalf("idle %+v: the frame did not wake the thread by interrupt", th.Idle)
	}
}
