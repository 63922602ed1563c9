package ring

import (
	"bytes"
	"testing"

	"github.com/uiod/uiod/nic"
)

// TestRxRewind checks the ring after a queue reset: every posted buffer stays posted
// (moved to the slots from 0, none lost or doubled, the pool untouched), frames completed
// and not yet taken are counted lost, and a NIC that starts again at head 0 fills the
// rewound ring byte-exact. The cases put the ring's posted range before and across the
// end of the ring.
func TestRxRewind(t *testing.T) {
	const ring = 32
	tests := []struct {
		name           string
		taken, untaken int // frames the driver took before the reset, frames it had not yet
		wantLost       int
	}{
		{"fresh", 0, 0, 0},
		{"after some frames", 5, 0, 0},
		{"wrapped", 40, 0, 0},
		{"wrapped with frames waiting", 45, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRxFixture(t, ring, 3*ring, 2048)
			f.q.Fill()
			bufs := make([]*nic.Buf, 1)
			for i := 0; i < tt.taken; i++ {
				if !f.hw.receive(bytes.Repeat([]byte{byte(i)}, 64), 0) {
					t.Fatalf("frame %d: ring full", i)
				}
				if f.q.Burst(bufs) != 1 {
					t.Fatalf("frame %d not received", i)
				}
				bufs[0].Free()
			}
			for i := 0; i < tt.untaken; i++ {
				f.hw.receive(bytes.Repeat([]byte{0xee}, 64), 0)
			}
			free := f.pool.Avail()
			posted := int((f.q.tail - f.q.next) & f.q.mask)
			if lost := f.q.Rewind(); lost != tt.wantLost {
				t.Errorf("lost %d, want %d", lost, tt.wantLost)
			}
			if f.pool.Avail() != free {
				t.Errorf("the pool went from %d to %d free buffers", free, f.pool.Avail())
			}
			if f.q.next != 0 || int(f.q.tail) != posted {
				t.Fatalf("next %d tail %d after the rewind, want 0 and %d", f.q.next, f.q.tail, posted)
			}
			seen := map[uint64]bool{}
			for s := 0; s < ring; s++ {
				b := f.q.bufs[s]
				if (b != nil) != (s < posted) {
					t.Fatalf("slot %d: buffer %v, want one in slots below %d only", s, b, posted)
				}
				if b == nil {
					continue
				}
				if seen[b.IOVA()] || f.q.desc[s].qw0 != b.IOVA() || f.q.desc[s].w2 != 0 {
					t.Fatalf("slot %d: descriptor %+v for buffer %#x (seen before %v)", s, f.q.desc[s], b.IOVA(), seen[b.IOVA()])
				}
				seen[b.IOVA()] = true
			}
			f.conserved(t, 0)
			f.hw.head = 0
			f.q.RingTail()
			want := bytes.Repeat([]byte{0x5a}, 100)
			if !f.hw.receive(want, 0) || f.q.Burst(bufs) != 1 || !bytes.Equal(bufs[0].Bytes(), want) {
				t.Fatal("no byte-exact frame after the rewind")
			}
			bufs[0].Free()
		})
	}
}
