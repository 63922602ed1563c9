package intel

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// loopback gives queue 0 an RX and a TX ring of n descriptors, every TX descriptor holding
// the same 64-byte frame, and returns one round through the model: a frame received from
// the wire into descriptor i and the frame in descriptor i+1 transmitted to the wire.
func (g *rig) loopback(n int) (round func(i int)) {
	rx := g.setupRX(0, n, 2048, true)
	tx := g.setupTX(0, n, 2048)
	f := g.frame(64, 1)
	for i := 0; i < n; i++ {
		tx.fillTX(i, f, txCmd)
	}
	g.peer.SetHandler(func([]byte, int64) {})
	return func(i int) {
		g.peer.Send(f)
		rx.post(i)
		g.wr(g.rxq(0, intelnic.QT), uint32(i))
		g.wr(g.txq(0, intelnic.QT), uint32((i+1)%n))
	}
}

// BenchmarkModelRXTX measures the model's own cost per frame: one frame received from the
// wire into a ring and one transmitted from a ring to the wire.
func BenchmarkModelRXTX(b *testing.B) {
	g := newReadyRig(b)
	const n = 256
	round := g.loopback(n)
	b.ReportAllocs()
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		round(k % n)
	}
	b.StopTimer()
	if st := g.m.Stats(); st.RxFrames != uint64(b.N) || st.TxFrames != uint64(b.N) {
		b.Fatalf("stats %+v after %d rounds", st, b.N)
	}
}

func TestModelPathAllocs(t *testing.T) {
	g := newReadyRig(t)
	const n = 64
	round := g.loopback(n)
	k := 0
	next := func() {
		round(k % n)
		k++
	}
	for i := 0; i < 2*n; i++ { // warm up the scratch buffers
		next()
	}
	if a := testing.AllocsPerRun(1000, next); a != 0 {
		t.Fatalf("%v allocations per frame through the model", a)
	}
}
