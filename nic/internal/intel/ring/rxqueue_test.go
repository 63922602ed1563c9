package ring

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
)

type rxFixture struct {
	dma  *fakeDMA
	pool *nic.Mempool
	q    *RxQueue
	hw   *fakeRx
}

func newRxFixture(t testing.TB, ring, poolSize, bufSize int) *rxFixture {
	t.Helper()
	dma := newFakeDMA(0x10000000)
	pool, err := nic.NewMempool(dma, poolSize, bufSize)
	if err != nil {
		t.Fatal(err)
	}
	tail := &tailReg{}
	q, err := NewRxQueue(RxConfig{DMA: dma, Pool: pool, Size: ring, Tail: Doorbell{Reg: tail, Off: 0x1018}})
	if err != nil {
		t.Fatal(err)
	}
	return &rxFixture{dma: dma, pool: pool, q: q, hw: &fakeRx{q: q, dma: dma, tail: tail}}
}

// conserved checks that every buffer is either free or posted: each slot of [next, tail)
// holds one (the other slots' pointers are stale and not counted).
func (f *rxFixture) conserved(t testing.TB, held int) {
	t.Helper()
	posted := 0
	for s := f.q.next; s != f.q.tail; s = (s + 1) & f.q.mask {
		if f.q.bufs[s] == nil {
			t.Fatalf("slot %d of the posted [%d, %d) holds no buffer", s, f.q.next, f.q.tail)
		}
		posted++
	}
	if got := f.pool.Avail() + posted + held; got != f.pool.Size() {
		t.Fatalf("buffers: %d free + %d posted + %d held = %d, pool has %d", f.pool.Avail(), posted, held, got, f.pool.Size())
	}
}

func TestRxFill(t *testing.T) {
	f := newRxFixture(t, 64, 200, 2048)
	if n := f.q.Fill(); n != 63 {
		t.Fatalf("Fill posted %d, want 63", n)
	}
	if f.hw.tail.v != 63 || f.hw.tail.writes != 1 {
		t.Fatalf("tail = %d after %d writes, want 63 after 1", f.hw.tail.v, f.hw.tail.writes)
	}
	if n := f.q.Fill(); n != 63 || f.hw.tail.writes != 1 {
		t.Fatalf("second Fill: posted %d, %d tail writes", n, f.hw.tail.writes)
	}
	f.conserved(t, 0)
	f.q.Release()
	if f.pool.Avail() != f.pool.Size() {
		t.Fatalf("after Release %d of %d free", f.pool.Avail(), f.pool.Size())
	}
}

func TestRxByteExactAcrossWraps(t *testing.T) {
	const ring, bufSize = 32, 2048
	f := newRxFixture(t, ring, 3*ring, bufSize)
	f.q.Fill()
	rng := rand.New(rand.NewPCG(1, 2))
	var sent [][]byte
	bufs := make([]*nic.Buf, 16)
	frames := 20000
	if testing.Short() {
		frames = 5000
	}
	got := 0
	for got < frames {
		// the NIC delivers a random number of frames, the driver takes random bursts
		for k := rng.IntN(40); k > 0 && len(sent) < frames; k-- {
			fr := make([]byte, 60+rng.IntN(bufSize-60+1))
			for i := range fr {
				fr[i] = byte(rng.Uint32())
			}
			if !f.hw.receive(fr, 0) {
				break
			}
			sent = append(sent, fr)
		}
		n := f.q.Burst(bufs[:1+rng.IntN(len(bufs))])
		for _, b := range bufs[:n] {
			if !bytes.Equal(b.Bytes(), sent[got]) {
				t.Fatalf("frame %d: got %d bytes, want %d, contents differ", got, b.Len(), len(sent[got]))
			}
			got++
			b.Free()
		}
		f.conserved(t, 0)
	}
	st := f.q.Stats()
	if st.Packets != uint64(frames) || st.Errors != 0 || st.Fragments != 0 {
		t.Fatalf("stats %+v, want %d packets and no errors", st, frames)
	}
}

func TestRxBadWriteBacks(t *testing.T) {
	good := bytes.Repeat([]byte{0xab}, 100)
	tests := []struct {
		name       string
		inject     func(f *rxFixture)
		wantErrs   uint64
		wantFrags  uint64
		wantFrames int // good frames delivered after the fault
	}{
		{
			name: "length zero",
			inject: func(f *rxFixture) {
				f.hw.receive(good, 0)
				f.q.desc[0].w3 = 0
			},
			wantErrs: 1, wantFrames: 1,
		},
		{
			name: "length beyond buffer",
			inject: func(f *rxFixture) {
				f.hw.receive(good, 0)
				f.q.desc[0].w3 = 0xffff
			},
			wantErrs: 1, wantFrames: 1,
		},
		{
			name: "multi-descriptor frame",
			inject: func(f *rxFixture) {
				f.hw.receive(bytes.Repeat([]byte{1}, 3000), 1024)
			},
			wantFrags: 1, wantFrames: 1,
		},
		{
			name: "no EOP on last descriptor",
			inject: func(f *rxFixture) {
				f.hw.receive(good, 0)
				f.q.desc[0].w2 = intelnic.RxStatusDD
			},
			wantFrags: 1, wantFrames: 0, // the next frame is taken as the continuation
		},
		{
			name: "DD on the unposted slot",
			inject: func(f *rxFixture) {
				f.q.desc[f.q.tail].w3 = 5000
				f.q.desc[f.q.tail].w2 = intelnic.RxStatusDD | intelnic.RxStatusEOP
			},
			wantErrs: 1, wantFrames: 1,
		},
		{
			name: "DD with random garbage everywhere",
			inject: func(f *rxFixture) {
				for i := range f.q.desc {
					f.q.desc[i].w2 = intelnic.RxStatusDD | uint32(i)<<1&intelnic.RxStatusEOP
					f.q.desc[i].w3 = uint32(i * 997)
				}
			},
			wantErrs: 0, wantFrames: -1, // anything but a panic or a lost buffer
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRxFixture(t, 16, 40, 2048)
			f.q.Fill()
			tt.inject(f)
			bufs := make([]*nic.Buf, 32)
			var got []*nic.Buf
			for i := 0; i < 4; i++ {
				n := f.q.Burst(bufs)
				got = append(got, bufs[:n]...)
			}
			f.conserved(t, len(got))
			for _, b := range got {
				if b.Len() <= 0 || b.Len() > b.Cap() {
					t.Errorf("delivered a frame of %d bytes", b.Len())
				}
				b.Free()
			}
			if tt.wantFrames >= 0 {
				f.hw.receive(good, 0)
				n := f.q.Burst(bufs)
				if n != tt.wantFrames {
					t.Fatalf("after the fault %d good frames, want %d", n, tt.wantFrames)
				}
				for _, b := range bufs[:n] {
					if !bytes.Equal(b.Bytes(), good) {
						t.Fatalf("frame after the fault differs")
					}
					b.Free()
				}
				st := f.q.Stats()
				if st.Errors != tt.wantErrs || st.Fragments != tt.wantFrags {
					t.Fatalf("stats %+v, want %d errors, %d fragments", st, tt.wantErrs, tt.wantFrags)
				}
			}
			f.conserved(t, 0)
			f.q.Release()
			if f.pool.Avail() != f.pool.Size() {
				t.Fatalf("%d of %d buffers free after Release", f.pool.Avail(), f.pool.Size())
			}
		})
	}
}

func TestRxPoolExhausted(t *testing.T) {
	f := newRxFixture(t, 32, 8, 2048)
	if n := f.q.Fill(); n != 8 {
		t.Fatalf("posted %d with 8 buffers", n)
	}
	if f.q.Stats().NoBufs == 0 {
		t.Fatal("NoBufs not counted")
	}
	for i := 0; i < 8; i++ {
		if !f.hw.receive([]byte("0123456789012345678901234567890123456789012345678901234567890"), 0) {
			t.Fatalf("frame %d not accepted", i)
		}
	}
	if f.hw.receive(make([]byte, 64), 0) {
		t.Fatal("NIC wrote into an unposted slot")
	}
	bufs := make([]*nic.Buf, 32)
	n := f.q.Burst(bufs)
	if n != 8 {
		t.Fatalf("got %d frames, want 8", n)
	}
	if posted := (f.q.tail - f.q.next) & f.q.mask; posted != 0 {
		t.Fatalf("%d posted with an empty pool", posted)
	}
	for _, b := range bufs[:n] {
		b.Free()
	}
	f.q.Burst(bufs)
	if posted := (f.q.tail - f.q.next) & f.q.mask; posted != 8 {
		t.Fatalf("%d posted after buffers came back, want 8", posted)
	}
	f.conserved(t, 0)
}

func TestRxBurstAllocs(t *testing.T) {
	f := newRxFixture(t, 64, 200, 2048)
	f.q.Fill()
	frame := make([]byte, 128)
	bufs := make([]*nic.Buf, 32)
	allocs := testing.AllocsPerRun(1000, func() {
		for i := 0; i < 32; i++ {
			f.hw.receive(frame, 0)
		}
		n := f.q.Burst(bufs)
		for _, b := range bufs[:n] {
			b.Free()
		}
	})
	if allocs != 0 {
		t.Fatalf("Burst allocates %.1f times", allocs)
	}
}

// FuzzRxWriteBack lets the "NIC" write arbitrary status and length words into arbitrary
// slots: the driver must never panic, never hand out an out-of-range frame and never lose
// a buffer.
func FuzzRxWriteBack(f *testing.F) {
	f.Add([]byte{0, 3, 0x40, 0, 1, 1, 0, 0x10})
	f.Add([]byte{5, 1, 0xff, 0xff, 7, 3, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, ops []byte) {
		fx := newRxFixture(t, 16, 24, 1024)
		fx.q.Fill()
		bufs := make([]*nic.Buf, 8)
		var held []*nic.Buf
		for len(ops) >= 4 {
			slot, st, length := ops[0]&15, uint32(ops[1]&3), uint32(ops[2])|uint32(ops[3])<<8
			ops = ops[4:]
			d := &fx.q.desc[slot]
			d.w3 = length
			d.w2 = st
			n := fx.q.Burst(bufs[:1+int(slot&7)])
			for _, b := range bufs[:n] {
				if b.Len() <= 0 || b.Len() > b.Cap() {
					t.Fatalf("frame of %d bytes in a %d-byte buffer", b.Len(), b.Cap())
				}
				held = append(held, b)
			}
			if len(held) > 4 {
				for _, b := range held {
					b.Free()
				}
				held = held[:0]
			}
			fx.conserved(t, len(held))
		}
		for _, b := range held {
			b.Free()
		}
		fx.q.Release()
		if fx.pool.Avail() != fx.pool.Size() {
			t.Fatalf("%d of %d buffers free", fx.pool.Avail(), fx.pool.Size())
		}
	})
}

// TestRxTimestampMark checks that a write-back's TS bit marks the frame it belongs to, and
// only that one, whether the burst takes the frame itself (one completed), through
// takeFast (several) or as a tagged frame through rare.
func TestRxTimestampMark(t *testing.T) {
	plain := bytes.Repeat([]byte{0xab}, 100)
	tagged := append(bytes.Repeat([]byte{0xff}, 12), 0x81, 0x00)
	tagged = append(tagged, bytes.Repeat([]byte{0xcd}, nic.EthHeader+1500+nic.VLANTag-len(tagged))...)
	for _, tc := range []struct {
		name   string
		frames [][]byte
		marked []bool
	}{
		{"one frame", [][]byte{plain}, []bool{true}},
		{"one frame unmarked", [][]byte{plain}, []bool{false}},
		{"several", [][]byte{plain, plain, plain}, []bool{false, true, true}},
		{"tagged", [][]byte{plain, tagged}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRxFixture(t, 32, 64, 2048)
			f.q.plain = 1500 + nic.EthHeader // as with MTU 1500, so the tagged frame is a rare one
			f.q.Fill()
			for i, fr := range tc.frames {
				d := &f.q.desc[f.hw.head]
				if !f.hw.receive(fr, 0) {
					t.Fatal("ring full")
				}
				if tc.marked[i] {
					d.w2 |= intelnic.RxStatusTS
				}
			}
			bufs := make([]*nic.Buf, 32)
			if n := f.q.Burst(bufs); n != len(tc.frames) {
				t.Fatalf("Burst = %d, want %d", n, len(tc.frames))
			}
			for i, b := range bufs[:len(tc.frames)] {
				if b.Len() != len(tc.frames[i]) || b.RxTimestamped() != tc.marked[i] {
					t.Errorf("frame %d: length %d, timestamped %v; want %d, %v", i, b.Len(), b.RxTimestamped(), len(tc.frames[i]), tc.marked[i])
				}
				b.Free()
			}
			f.conserved(t, 0)
		})
	}
}
