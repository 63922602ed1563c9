package nictest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// Forward sends frames of random sizes (60 bytes up to the buffer size, or to the
// standard MTU's longest for a driver with an MTU) from the peer,
// receives them, sends them back and checks every byte on both legs, across many ring
// wraps: a million frames each way (100 000 with -short).
func Forward(t *testing.T, drv Driver) {
	const ring = 64
	h := New(t, drv, nic.Config{RxRing: ring, TxRing: ring, PoolSize: 160, Interrupts: nic.IRQNone})
	rng := rand.New(rand.NewPCG(11, 12))
	frames := 1_000_000
	if testing.Short() {
		frames = 100_000
	}
	maxLen := nic.DefaultBufSize
	if drv.MaxMTU > 0 {
		maxLen = nic.DefaultMTU + nic.EthHeader // the longest untagged frame of the MTU
	}
	bufs := make([]*nic.Buf, 48)
	templ := make([][]byte, 256)
	for i := range templ {
		templ[i] = Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1000, 2000, 60+rng.IntN(maxLen-60+1))
	}
	var sent [][]byte
	done := 0
	for done < frames {
		k := 1 + rng.IntN(len(bufs))
		sent = sent[:0]
		for i := 0; i < k; i++ {
			f := templ[rng.IntN(len(templ))]
			f[len(f)-1] = byte(done + i) // consecutive frames differ
			if err := h.Peer.Send(f); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, append([]byte(nil), f...))
		}
		got := 0
		for got < k {
			n := h.Port.RxBurst(0, bufs[got:k])
			if n == 0 {
				t.Fatalf("after %d frames: got %d of %d (model %+v, port %+v)", done, got, k, h.Model.Counters(), h.Port.Stats())
			}
			for j, b := range bufs[got : got+n] {
				if !bytes.Equal(b.Bytes(), sent[got+j]) {
					t.Fatalf("frame %d: received %d bytes, sent %d: contents differ", done+got+j, b.Len(), len(sent[got+j]))
				}
			}
			got += n
		}
		for off := 0; off < k; {
			n := h.Port.TxBurst(0, bufs[off:k])
			if n == 0 {
				t.Fatalf("tx ring stuck after %d frames", done)
			}
			off += n
		}
		back := h.Received()
		if len(back) != k {
			t.Fatalf("peer got %d of %d frames back", len(back), k)
		}
		for i := range back {
			if !bytes.Equal(back[i], sent[i]) {
				t.Fatalf("frame %d: sent back %d bytes, want %d: contents differ", done+i, len(back[i]), len(sent[i]))
			}
		}
		done += k
	}
	h.Port.Reclaim(0)
	st, ms := h.Port.Stats(), h.Model.Counters()
	if st.RxPackets != uint64(done) || st.TxPackets != uint64(done) || st.RxErrors != 0 || st.TxErrors != 0 || st.RxMissed != 0 {
		t.Fatalf("stats %+v after %d frames each way", st, done)
	}
	if ms.Missed != 0 || ms.WireOut != uint64(done) {
		t.Fatalf("model %+v after %d frames each way", ms, done)
	}
	t.Logf("%d frames each way, %d ring wraps", done, done/ring)
}

// AcrossAddressSpaces forwards from one port to a port behind another IOMMU (vfio to
// uio, say): the transmit side must copy and never hand the NIC a bus address it cannot
// reach, and the originals go back to their pool at once.
func AcrossAddressSpaces(t *testing.T, drv Driver) {
	cfg := nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone}
	a, b := New(t, drv, cfg), New(t, drv, cfg)
	rng := rand.New(rand.NewPCG(31, 32))
	bufs := make([]*nic.Buf, 32)
	var sent [][]byte
	for round := 0; round < 50; round++ {
		for i := 0; i < 20; i++ {
			f := Frame(rng, Broadcast, [4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 9, 10, 60+rng.IntN(1400))
			sent = append(sent, f)
			a.Peer.Send(f)
		}
		n := a.Port.RxBurst(0, bufs)
		if got := b.Port.TxBurst(0, bufs[:n]); got != n {
			t.Fatalf("round %d: tx took %d of %d", round, got, n)
		}
	}
	got := b.Received()
	if len(got) != len(sent) {
		t.Fatalf("forwarded %d of %d", len(got), len(sent))
	}
	for i := range got {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if c := b.Port.TxCopies(0); c != uint64(len(sent)) {
		t.Fatalf("%d copies, want %d", c, len(sent))
	}
	if p, posted := a.Port.RxPool(0), a.Port.RxPosted(0); p.Avail() != p.Size()-posted {
		t.Fatalf("source pool: %d of %d free with %d posted: originals not freed", p.Avail(), p.Size(), posted)
	}
}

// SharedAddressSpace forwards between two ports on one IOMMU (two functions in one VFIO
// container): the transmit side sends the received buffers without copying.
func SharedAddressSpace(t *testing.T, drv Driver) {
	iommu := sim.NewIOMMU()
	cfg := nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone}
	a := NewOn(t, drv, cfg, ModelConfig{IOMMU: iommu})
	b := NewOn(t, drv, cfg, ModelConfig{IOMMU: iommu})
	a.Send(10)
	bufs := make([]*nic.Buf, 16)
	n := a.Port.RxBurst(0, bufs)
	if n != 10 || b.Port.TxBurst(0, bufs[:n]) != n {
		t.Fatalf("forwarded %d of 10", n)
	}
	if got, c := len(b.Received()), b.Port.TxCopies(0); got != 10 || c != 0 {
		t.Fatalf("peer got %d frames, %d copies; want 10 without copies", got, c)
	}
}
