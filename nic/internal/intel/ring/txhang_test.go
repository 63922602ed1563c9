package ring

import (
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
)

// hangFixture is a TX ring with a hang timeout of 1 s on a clock the test moves, counting
// its reads.
type hangFixture struct {
	*txFixture
	now   int64
	reads int
}

func newHangFixture(t *testing.T) *hangFixture {
	t.Helper()
	f := &hangFixture{txFixture: newTxFixture(t, 16, 64)}
	tail := &tailReg{}
	q, err := NewTxQueue(TxConfig{DMA: f.dma, Size: 16, Tail: Doorbell{Reg: tail, Off: 0x6018},
		Timeout: time.Second, Now: func() int64 { f.reads++; return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.q, f.hw = q, &fakeTx{q: q, dma: f.dma, tail: tail}
	return f
}

// burst sends n fresh 60-byte frames and returns how many the queue took; it frees the
// rest.
func (f *hangFixture) burst(t *testing.T, n int) int {
	t.Helper()
	bufs := make([]*nic.Buf, 0, n)
	for i := 0; i < n; i++ {
		b := f.pool.Get()
		b.SetLen(60)
		bufs = append(bufs, b)
	}
	reads := f.reads
	k := f.q.Burst(bufs)
	if f.reads-reads > 1 {
		t.Fatalf("one burst read the clock %d times", f.reads-reads)
	}
	for _, b := range bufs[k:] {
		b.Free()
	}
	return k
}

// TestTxHangDetected checks the hang check: pending descriptors without a write-back for
// twice the timeout make the queue hung, it takes nothing more, and Recover frees its
// buffers and counts the frames the NIC never fetched.
func TestTxHangDetected(t *testing.T) {
	f := newHangFixture(t)
	if n := f.burst(t, 4); n != 4 {
		t.Fatalf("queued %d of 4", n)
	}
	f.hw.send(1, nil) // the NIC sends one frame, then stops: 3 pending
	for step := 0; step < 3; step++ {
		if f.q.Hung() {
			t.Fatalf("hung after %d s", step)
		}
		f.burst(t, 0)
		f.now += int64(time.Second)
	}
	f.burst(t, 0) // the third check: no write-back since the first
	if !f.q.Hung() {
		t.Fatal("no hang after 3 s without a write-back")
	}
	if n := f.burst(t, 2); n != 0 {
		t.Fatalf("a hung queue took %d frames", n)
	}
	if st := f.q.Stats(); st.Timeouts != 1 {
		t.Fatalf("timeouts %d, want 1", st.Timeouts)
	}
	f.q.Recover(f.hw.head) // the NIC fetched descriptor 0 only
	if st := f.q.Stats(); st.Discarded != 3 {
		t.Fatalf("discarded %d, want the 3 frames past the head", st.Discarded)
	}
	if f.q.Hung() || f.q.InFlight() != 0 || f.pool.Avail() != f.pool.Size() {
		t.Fatalf("after recover: hung %v, in flight %d, %d of %d buffers free", f.q.Hung(), f.q.InFlight(), f.pool.Avail(), f.pool.Size())
	}
	f.hw.head = 0 // the port programs the ring again with head and tail 0
	if n := f.burst(t, 2); n != 2 {
		t.Fatalf("after recover the queue took %d of 2", n)
	}
	if f.hw.send(-1, nil) != 2 {
		t.Fatal("frames after the recovery not sent")
	}
	f.q.Reclaim()
	f.releaseAll(t)
}

// TestTxHangTwiceTheTimeout checks that a queue whose first frames are never written
// back is hung only once twice the timeout has passed since the first check.
func TestTxHangTwiceTheTimeout(t *testing.T) {
	f := newHangFixture(t)
	f.burst(t, 2)
	for _, at := range []time.Duration{0, time.Second, 1999 * time.Millisecond} {
		f.now = int64(at)
		if f.burst(t, 0); f.q.Hung() {
			t.Fatalf("hung %v after the first check", at)
		}
	}
	f.now = int64(2 * time.Second)
	if f.burst(t, 0); !f.q.Hung() {
		t.Fatal("not hung 2 s (twice the timeout) after the first check")
	}
	f.q.Recover(0)
	if f.pool.Avail() != f.pool.Size() || f.q.Stats().Discarded != 2 {
		t.Fatalf("%d of %d buffers free, %d discarded", f.pool.Avail(), f.pool.Size(), f.q.Stats().Discarded)
	}
}

// TestTxHangNotOnProgress checks that a slow queue that keeps completing, an idle one and
// a failed reset's retry are judged as Linux's check does.
func TestTxHangNotOnProgress(t *testing.T) {
	f := newHangFixture(t)
	f.burst(t, 8)
	for i := 0; i < 6; i++ { // one write-back per second, for six seconds
		f.now += int64(time.Second)
		f.hw.send(1, nil)
		f.burst(t, 0)
		if f.q.Hung() {
			t.Fatalf("a queue that completes a descriptor every second hung after %d s", i+1)
		}
	}
	f.hw.send(-1, nil)
	f.burst(t, 0)
	f.now += int64(time.Hour)
	if f.burst(t, 0); f.q.Hung() {
		t.Fatal("an idle queue hung")
	}
	if f.reads != 0 {
		t.Fatalf("clock read %d times: a queue that completes or is idle never reads it", f.reads)
	}
	// A hang whose reset fails is reported again only after the timeout.
	f.burst(t, 1)
	for i := 0; i < 3 && !f.q.Hung(); i++ {
		f.burst(t, 0)
		f.now += int64(time.Second)
	}
	if !f.q.Hung() {
		t.Fatal("no hang")
	}
	f.q.ResetFailed()
	if f.q.Hung() {
		t.Fatal("failed reset retried at once")
	}
	f.now += int64(time.Second)
	if !f.q.Hung() {
		t.Fatal("failed reset not retried after the timeout")
	}
	f.q.Recover(f.hw.head)
	f.releaseAll(t)
}

// TestTxBurstHangCheckAllocs checks that the hang check allocates nothing.
func TestTxBurstHangCheckAllocs(t *testing.T) {
	f := newHangFixture(t)
	f.burst(t, 2)
	var none []*nic.Buf
	if a := testing.AllocsPerRun(100, func() { f.now += int64(time.Millisecond); f.q.Burst(none) }); a != 0 {
		t.Fatalf("%v allocations per burst", a)
	}
	f.q.Release()
}
