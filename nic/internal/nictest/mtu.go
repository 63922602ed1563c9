package nictest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/uiod/uiod/nic"
)

// MTUs checks, at the standard MTU, at 9000 and at the driver's largest (drv.MaxMTU),
// that a port receives and sends byte for byte every frame the MTU allows — 60, 1514,
// 1515, 4096 and MTU+14 bytes where they fit, and one of MTU+18 with a VLAN tag — and
// that the untagged frame one byte longer is dropped on receive and counted (the MAC's
// oversize count or the port's RX errors) and refused on send (TX errors, nothing on
// the wire). A driver without MaxMTU carries the standard MTU only (BufferSizes then
// checks what its buffers take).
func MTUs(t *testing.T, drv Driver) {
	if drv.MaxMTU == 0 {
		t.Skip("the driver carries the standard MTU only")
	}
	done := map[int]bool{}
	for _, mtu := range []int{nic.DefaultMTU, 9000, drv.MaxMTU} {
		if mtu > drv.MaxMTU || done[mtu] {
			continue
		}
		done[mtu] = true
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			h := New(t, drv, nic.Config{RxRing: 16, TxRing: 16, MTU: mtu, Interrupts: nic.IRQNone})
			rng := rand.New(rand.NewPCG(7, uint64(mtu)))
			plain := mtu + nic.EthHeader
			frame := func(n int) []byte { return Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, n) }
			var want [][]byte
			for _, n := range []int{60, 1514, 1515, 4096, plain} {
				if n <= plain && (len(want) == 0 || len(want[len(want)-1]) < n) {
					want = append(want, frame(n))
				}
			}
			want = append(want, Tagged(frame(plain), 7))
			for _, f := range want {
				if err := h.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Peer.Send(frame(plain + 1)); err != nil {
				t.Fatal(err)
			}
			bufs := make([]*nic.Buf, 16)
			n := h.Port.RxBurst(0, bufs)
			var got []int
			for i, b := range bufs[:n] {
				got = append(got, b.Len())
				if i < len(want) && !bytes.Equal(b.Bytes(), want[i]) {
					t.Errorf("mtu %d: frame %d of %d bytes received with other contents", mtu, i, len(want[i]))
				}
			}
			if n != len(want) {
				for _, b := range bufs[:n] {
					b.Free()
				}
				t.Fatalf("mtu %d: received frames of %v bytes, want %d frames of %v (model %+v, port %+v)", mtu, got, len(want), lengths(want), h.Model.Counters(), h.Port.Stats())
			}
			if tl, e := h.Model.Counters().TooLong, h.Port.Stats().RxErrors; tl+e == 0 {
				t.Errorf("mtu %d: the frame of %d bytes was dropped uncounted (model too long %d, port RX errors %d)", mtu, plain+1, tl, e)
			}
			// Back out, and the last buffer once more with an untagged frame one byte too
			// long for the MTU: refused and counted.
			errs := h.Port.Stats().TxErrors
			if sent := h.Port.TxBurst(0, bufs[:n-1]); sent != n-1 {
				t.Fatalf("mtu %d: TxBurst took %d of %d", mtu, sent, n-1)
			}
			long := bufs[n-1]
			long.SetLen(copy(long.Data(), frame(plain+1)))
			if sent := h.Port.TxBurst(0, []*nic.Buf{long}); sent != 1 {
				t.Fatalf("mtu %d: TxBurst of the frame too long took %d, want 1 (taken, refused, freed)", mtu, sent)
			}
			back := h.Received() // the models send at the tail write
			for i, f := range back {
				if i < n-1 && !bytes.Equal(f, want[i]) {
					t.Errorf("mtu %d: frame %d of %d bytes sent with other contents (%d bytes on the wire)", mtu, i, len(want[i]), len(f))
				}
			}
			if got := len(back); got != n-1 {
				t.Errorf("mtu %d: %d frames on the wire, want %d (the one too long refused)", mtu, got, n-1)
			}
			if e := h.Port.Stats().TxErrors - errs; e != 1 {
				t.Errorf("mtu %d: %d TX errors for the frame too long, want 1", mtu, e)
			}
		})
	}
}

// Tagged is f with an 802.1Q tag of VLAN vid inserted after its MAC addresses (4 bytes
// longer).
func Tagged(f []byte, vid uint16) []byte {
	out := make([]byte, 0, len(f)+nic.VLANTag)
	out = append(out, f[:12]...)
	out = append(out, 0x81, 0x00, byte(vid>>8), byte(vid))
	return append(out, f[12:]...)
}

// lengths are the frames' lengths.
func lengths(fs [][]byte) []int {
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i] = len(f)
	}
	return out
}
