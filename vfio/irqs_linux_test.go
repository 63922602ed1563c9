package vfio

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestEncodeIRQSet(t *testing.T) {
	ne := binary.NativeEndian
	t.Run("eventfds", func(t *testing.T) {
		// fds above 255 catch a one-byte truncation; every slot must hold its fd.
		fds := []int32{3, 300, 70000, -1, 1 << 30}
		buf := make([]byte, 64)
		for i := range buf {
			buf[i] = 0xEE // garbage an encoder must overwrite
		}
		b := encodeIRQSet(buf, irqSetDataEventfd|irqSetActionTrig, 2, 0, uint32(len(fds)), fds)
		if len(b) != irqSetHeaderSize+4*len(fds) {
			t.Fatalf("len %d", len(b))
		}
		hdr := []uint32{uint32(len(b)), irqSetDataEventfd | irqSetActionTrig, 2, 0, uint32(len(fds))}
		for i, want := range hdr {
			if got := ne.Uint32(b[4*i:]); got != want {
				t.Errorf("header word %d = %#x, want %#x", i, got, want)
			}
		}
		for i, fd := range fds {
			if got := int32(ne.Uint32(b[irqSetHeaderSize+4*i:])); got != fd {
				t.Errorf("slot %d = %d, want %d", i, got, fd)
			}
		}
	})
	t.Run("unmask", func(t *testing.T) {
		var buf [irqSetHeaderSize]byte
		b := encodeIRQSet(buf[:], irqSetDataNone|irqSetActionUnmask, 0, 0, 1, nil)
		want := []uint32{irqSetHeaderSize, irqSetDataNone | irqSetActionUnmask, 0, 0, 1}
		for i, w := range want {
			if got := ne.Uint32(b[4*i:]); got != w {
				t.Errorf("word %d = %#x, want %#x", i, got, w)
			}
		}
	})
	t.Run("fd count mismatch panics", func(t *testing.T) {
		testutil.Panics(t, "encodeIRQSet with 1 fd for 3 vectors", func() {
			encodeIRQSet(make([]byte, 64), irqSetDataEventfd|irqSetActionTrig, 2, 0, 3, []int32{5})
		})
	})
	t.Run("no allocation", func(t *testing.T) {
		var buf [irqSetHeaderSize]byte
		if n := testing.AllocsPerRun(100, func() {
			encodeIRQSet(buf[:], irqSetDataNone|irqSetActionUnmask, 0, 0, 1, nil)
		}); n != 0 {
			t.Errorf("%v allocations", n)
		}
	})
}
