package dataplane

import (
	"maps"
	"testing"

	"github.com/uiod/uiod/nic"
)

// copyOf takes a buffer from frame f's pool (the RX queue's, this thread's) holding f's
// bytes with the first byte set to tag.
func copyOf(t testing.TB, f *nic.Buf, tag byte) *nic.Buf {
	c := f.Pool().Get()
	if c == nil {
		t.Fatal("pool empty")
	}
	c.SetLen(copy(c.Data(), f.Bytes()))
	c.Bytes()[0] = tag
	return c
}

func TestSendCopy(t *testing.T) {
	tests := []struct {
		name string
		app  func(t *testing.T) AppFunc
		want map[string][]byte
		drop map[string]uint64
		tx   uint64
	}{
		{"flood: original to c, copies to b and a", func(t *testing.T) AppFunc {
			return func(b *Burst) {
				for i, f := range b.Frames {
					b.SendCopy(i, copyOf(t, f, 0x10+f.Bytes()[0]), 1)
					b.SendCopy(i, copyOf(t, f, 0x20+f.Bytes()[0]), 0)
					b.Send(i, 2)
				}
			}
		}, map[string][]byte{"b": {0x10, 0x11, 0x12}, "a": {0x20, 0x21, 0x22}, "c": {0, 1, 2}}, nil, 9},
		{"order kept on one port between frames and copies", func(t *testing.T) AppFunc {
			return func(b *Burst) {
				for i, f := range b.Frames {
					b.Send(i, 2)
					if i == 1 {
						b.SendCopy(i, copyOf(t, f, 0x31), 2)
						b.SendCopy(i, copyOf(t, f, 0x32), 2)
					}
				}
			}
		}, map[string][]byte{"c": {0, 1, 0x31, 0x32, 2}}, nil, 5},
		{"SendAll after copies", func(t *testing.T) AppFunc {
			return func(b *Burst) {
				b.SendCopy(0, copyOf(t, b.Frames[0], 0x40), 2)
				b.SendAll(2)
			}
		}, map[string][]byte{"c": {0, 0x40, 1, 2}}, nil, 4},
		{"copy to a port without tx queue, copy of a dropped frame", func(t *testing.T) AppFunc {
			return func(b *Burst) {
				b.SendCopy(0, copyOf(t, b.Frames[0], 0x50), 9)
				b.Drop(1, dropOdd)
				b.SendCopy(1, copyOf(t, b.Frames[1], 0x51), 1)
				b.Send(0, 1)
				b.Send(2, 1)
			}
		}, map[string][]byte{"b": {0, 0x51, 2}}, map[string]uint64{"no_tx_queue": 1, "test_odd": 1}, 3},
		{"copy after a frame index past the burst", func(t *testing.T) AppFunc {
			return func(b *Burst) {
				b.SendAll(1)
				b.SendCopy(7, copyOf(t, b.Frames[0], 0x60), 1)
			}
		}, map[string][]byte{"b": {0, 1, 2, 0x60}}, nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newAppRig(t, tt.app(t))
			r.poll(t, r.a, 3)
			if !maps.EqualFunc(r.sent, tt.want, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Errorf("sent % x, want % x", r.sent, tt.want)
			}
			st := r.stats(0)
			if !maps.Equal(st.DropsBy, tt.drop) || st.TxPackets+st.ToKernel != tt.tx {
				t.Errorf("stats %+v, want drops %v and %d sent", st, tt.drop, tt.tx)
			}
			clear(r.sent)
			r.poll(t, r.a, 3) // nothing of the burst's copies is left for the next
			if !maps.EqualFunc(r.sent, tt.want, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Errorf("second burst sent % x, want % x", r.sent, tt.want)
			}
			for _, p := range []*fakePort{r.a, r.b, r.c, r.k} {
				if n := p.leaked(); n != 0 {
					t.Errorf("%d buffers leaked", n)
				}
			}
		})
	}
}

func TestSendCopyAllocatesNothing(t *testing.T) {
	app := AppFunc(func(b *Burst) {
		for i, f := range b.Frames {
			c := f.Pool().Get()
			c.SetLen(copy(c.Data(), f.Bytes()))
			b.SendCopy(i, c, 1)
			b.Send(i, 2)
		}
	})
	if n := burstAllocs(t, app); n != 0 {
		t.Fatalf("a burst with copies allocates %.1f times", n)
	}
}
