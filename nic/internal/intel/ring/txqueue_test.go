package ring

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/nic"
)

type txFixture struct {
	dma  *fakeDMA
	pool *nic.Mempool // the application's buffers, same address space as the device
	q    *TxQueue
	hw   *fakeTx
}

// releaseAll takes the ring's buffers back and fails the test unless every buffer of the
// pool is then free.
func (f *txFixture) releaseAll(t *testing.T) {
	t.Helper()
	f.q.Release()
	if f.pool.Avail() != f.pool.Size() {
		t.Fatalf("%d of %d buffers free", f.pool.Avail(), f.pool.Size())
	}
}

func newTxFixture(t testing.TB, ring, poolSize int) *txFixture {
	t.Helper()
	dma := newFakeDMA(0x20000000)
	pool, err := nic.NewMempool(dma, poolSize, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tail := &tailReg{}
	q, err := NewTxQueue(TxConfig{DMA: dma, Size: ring, Tail: Doorbell{Reg: tail, Off: 0x6018}})
	if err != nil {
		t.Fatal(err)
	}
	return &txFixture{dma: dma, pool: pool, q: q, hw: &fakeTx{q: q, dma: dma, tail: tail}}
}

func fill(p *nic.Mempool, n int, rng *rand.Rand) []*nic.Buf {
	bufs := make([]*nic.Buf, 0, n)
	for i := 0; i < n; i++ {
		b := p.Get()
		if b == nil {
			break
		}
		b.SetLen(60 + rng.IntN(b.Cap()-60+1))
		for j := range b.Bytes() {
			b.Bytes()[j] = byte(rng.Uint32())
		}
		bufs = append(bufs, b)
	}
	return bufs
}

func TestTxByteExactAcrossWraps(t *testing.T) {
	f := newTxFixture(t, 32, 128)
	rng := rand.New(rand.NewPCG(3, 4))
	var want [][]byte
	var got [][]byte
	out := func(b []byte) { got = append(got, append([]byte(nil), b...)) }
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	for r := 0; r < rounds; r++ {
		bufs := fill(f.pool, 1+rng.IntN(40), rng)
		n := f.q.Burst(bufs)
		for _, b := range bufs[:n] {
			want = append(want, append([]byte(nil), b.Bytes()...))
		}
		for _, b := range bufs[n:] {
			b.Free()
		}
		if f.q.InFlight() > 31 {
			t.Fatalf("%d descriptors in flight on a ring of 32", f.q.InFlight())
		}
		f.hw.send(rng.IntN(40), out)
	}
	f.hw.send(-1, out)
	f.q.Reclaim()
	if len(got) != len(want) {
		t.Fatalf("sent %d frames, queued %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if f.pool.Avail() != f.pool.Size() || f.hw.faults != 0 {
		t.Fatalf("%d of %d buffers back, %d faults", f.pool.Avail(), f.pool.Size(), f.hw.faults)
	}
	if st := f.q.Stats(); st.Packets != uint64(len(want)) || st.Errors != 0 {
		t.Fatalf("stats %+v, want %d packets", st, len(want))
	}
}

func TestTxRingFull(t *testing.T) {
	f := newTxFixture(t, 8, 32)
	rng := rand.New(rand.NewPCG(5, 6))
	bufs := fill(f.pool, 20, rng)
	if n := f.q.Burst(bufs); n != 7 {
		t.Fatalf("accepted %d on an empty ring of 8, want 7", n)
	}
	if n := f.q.Burst(bufs[7:]); n != 0 {
		t.Fatalf("accepted %d on a full ring", n)
	}
	writes := f.hw.tail.writes
	f.hw.send(3, nil)
	if n := f.q.Burst(bufs[7:]); n != 3 {
		t.Fatalf("accepted %d after 3 completions, want 3", n)
	}
	if f.hw.tail.writes != writes+1 {
		t.Fatalf("%d doorbell writes for one burst", f.hw.tail.writes-writes)
	}
	for _, b := range bufs[10:] {
		b.Free()
	}
	f.hw.send(-1, nil)
	f.q.Reclaim()
	if f.pool.Avail() != f.pool.Size() {
		t.Fatalf("%d of %d buffers back", f.pool.Avail(), f.pool.Size())
	}
}

func TestTxBadLengths(t *testing.T) {
	f := newTxFixture(t, 8, 8)
	b := f.pool.Get() // length 0
	if n := f.q.Burst([]*nic.Buf{b}); n != 1 {
		t.Fatalf("Burst took %d", n)
	}
	if f.q.InFlight() != 0 || f.q.Stats().Errors != 1 || f.pool.Avail() != f.pool.Size() {
		t.Fatalf("zero-length frame: in flight %d, stats %+v, %d free", f.q.InFlight(), f.q.Stats(), f.pool.Avail())
	}
}

func TestTxPadsRunts(t *testing.T) {
	f := newTxFixture(t, 8, 8)
	tests := []int{1, 10, MinTxFrame - 1, MinTxFrame, 60}
	var want [][]byte
	for _, n := range tests {
		b := f.pool.Get()
		for i := range b.Data() {
			b.Data()[i] = 0xee // stale bytes beyond the frame
		}
		b.SetLen(n)
		for i := range b.Bytes() {
			b.Bytes()[i] = byte(i + 1)
		}
		w := make([]byte, max(n, MinTxFrame))
		copy(w, b.Bytes())
		want = append(want, w)
		if got := f.q.Burst([]*nic.Buf{b}); got != 1 {
			t.Fatalf("%d-byte frame: Burst took %d", n, got)
		}
	}
	var got [][]byte
	f.hw.send(-1, func(b []byte) { got = append(got, append([]byte(nil), b...)) })
	if len(got) != len(want) || f.q.Stats().Errors != 0 {
		t.Fatalf("sent %d frames of %d, stats %+v", len(got), len(want), f.q.Stats())
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%d-byte frame sent as % x, want % x", tests[i], got[i], want[i])
		}
	}
	f.q.Reclaim()
}

func TestTxCopiesForeignBuffers(t *testing.T) {
	f := newTxFixture(t, 16, 8)
	other := newFakeDMA(0x90000000)
	foreign, err := nic.NewMempool(other, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	bufs := fill(foreign, 8, rng)
	var want [][]byte
	for _, b := range bufs {
		want = append(want, append([]byte(nil), b.Bytes()...))
	}
	if n := f.q.Burst(bufs); n != 8 {
		t.Fatalf("accepted %d of 8", n)
	}
	if foreign.Avail() != 8 {
		t.Fatalf("foreign buffers not freed at once: %d of 8 free", foreign.Avail())
	}
	var got [][]byte
	f.hw.send(-1, func(b []byte) { got = append(got, append([]byte(nil), b...)) })
	if f.hw.faults != 0 {
		t.Fatalf("%d DMA faults: a foreign bus address reached the ring", f.hw.faults)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	f.q.Reclaim()
	if cp := f.q.CopyPool(); cp.Avail() != cp.Size() {
		t.Fatalf("copy pool %d of %d free", cp.Avail(), cp.Size())
	}
	if st := f.q.Stats(); st.Copies != 8 {
		t.Fatalf("stats %+v, want 8 copies", st)
	}
}

// TestTxBurstAllocs checks that a burst, of full frames or of runts the queue pads,
// allocates nothing.
func TestTxBurstAllocs(t *testing.T) {
	tests := []struct {
		name string
		len  func(i int) int
	}{
		{"64-byte frames", func(int) int { return 64 }},
		{"runts", func(i int) int { return 1 + i%MinTxFrame }},
	}
	for _, tt := range tests {
		f := newTxFixture(t, 64, 64)
		bufs := make([]*nic.Buf, 32)
		allocs := testing.AllocsPerRun(1000, func() {
			for i := range bufs {
				bufs[i] = f.pool.Get()
				bufs[i].SetLen(tt.len(i))
			}
			f.q.Burst(bufs)
			f.hw.send(-1, nil)
		})
		if allocs != 0 {
			t.Errorf("Burst of %s allocates %.1f times", tt.name, allocs)
		}
	}
}
