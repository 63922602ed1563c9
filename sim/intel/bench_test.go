package intel

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// BenchmarkModelRXTX measures the model's own cost per frame: one frame received from the
// wire into a ring and one transmitted from a ring to the wire.
func BenchmarkModelRXTX(b *testing.B) {
	g := newRigB(b)
	const n = 256
	rx := g.setupRX(0, n, 2048, true)
	tx := g.setupTX(0, n, 2048)
	f := g.frame(64, 1)
	for i := 0; i < n; i++ {
		tx.fillTX(i, f, txCmd)
	}
	g.peer.SetHandler(func([]byte, int64) {})
	b.ReportAllocs()
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		i := k % n
		g.peer.Send(f)
		rx.post(i)
		g.wr(g.rxq(0, intelnic.QT), uint32(i))
		g.wr(g.txq(0, intelnic.QT), uint32((i+1)%n))
	}
	b.StopTimer()
	if st := g.m.Stats(); st.RxFrames != uint64(b.N) || st.TxFrames != uint64(b.N) {
		b.Fatalf("stats %+v after %d rounds", st, b.N)
	}
}

func TestModelPathAllocs(t *testing.T) {
	g := newRig(t, Config{})
	g.initDevice()
	const n = 64
	rx := g.setupRX(0, n, 2048, true)
	tx := g.setupTX(0, n, 2048)
	f := g.frame(64, 1)
	for i := 0; i < n; i++ {
		tx.fillTX(i, f, txCmd)
	}
	g.peer.SetHandler(func([]byte, int64) {})
	k := 0
	round := func() {
		i := k % n
		g.peer.Send(f)
		rx.post(i)
		g.wr(g.rxq(0, intelnic.QT), uint32(i))
		g.wr(g.txq(0, intelnic.QT), uint32((i+1)%n))
		k++
	}
	for i := 0; i < 2*n; i++ { // warm up the scratch buffers
		round()
	}
	if a := testing.AllocsPerRun(1000, round); a != 0 {
		t.Fatalf("%v allocations per frame through the model", a)
	}
}
