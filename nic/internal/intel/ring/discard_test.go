package ring

import "testing"

// TestDiscard checks the ring taken back after a reset under it: frames the NIC wrote
// back are freed as sent, only the others count as discarded, wherever in the ring the
// queue stood (Recover(0), what a port used before, counted by the distance from slot 0).
func TestDiscard(t *testing.T) {
	tests := []struct {
		name            string
		before          int // frames sent and reclaimed first: where the ring stands
		queued, sentNow int
	}{
		{"from slot 0, all sent", 0, 6, 6},
		{"from slot 0, some sent", 0, 6, 2},
		{"past slot 0, some sent", 10, 6, 2},
		{"wrapped, none sent", 12, 8, 0},
		{"wrapped, all sent", 12, 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHangFixture(t)
			for left := tt.before; left > 0; {
				n := f.burst(t, min(left, 8))
				f.hw.send(-1, nil)
				f.q.Reclaim()
				left -= n
			}
			if n := f.burst(t, tt.queued); n != tt.queued {
				t.Fatalf("queued %d of %d", n, tt.queued)
			}
			f.hw.send(tt.sentNow, nil)
			f.q.Discard()
			if st, want := f.q.Stats(), uint64(tt.queued-tt.sentNow); st.Discarded != want {
				t.Errorf("discarded %d, want %d (the frames not written back)", st.Discarded, want)
			}
			if f.q.InFlight() != 0 || f.pool.Avail() != f.pool.Size() {
				t.Errorf("after discard: in flight %d, %d of %d buffers free", f.q.InFlight(), f.pool.Avail(), f.pool.Size())
			}
			f.hw.head = 0
			if n := f.burst(t, 2); n != 2 {
				t.Fatalf("after discard the queue took %d of 2", n)
			}
			f.hw.send(-1, nil)
			f.q.Reclaim()
			f.releaseAll(t)
		})
	}
}
