package virtio

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestMTUFeature checks when the driver accepts VIRTIO_NET_F_MTU and which frames then
// reach the port: the device drops what is over its MTU (counted as too long), the
// driver what is over the port's (counted in RX errors), and a VLAN-tagged frame may be
// 4 bytes longer than an untagged one. The shared MTUs suite covers a port whose MTU is
// the device's.
func TestMTUFeature(t *testing.T) {
	type frame struct {
		n      int
		tagged bool
	}
	tests := []struct {
		name      string
		devMTU    int
		cfg       nic.Config
		feature   bool
		frames    []frame
		want      []int // lengths received, in order
		tooLong   uint64
		rxErrors  uint64
		txRefused []int // lengths refused on send (the rest are sent)
	}{
		{"standard port on a jumbo device: declined", 9000, nic.Config{}, false,
			[]frame{{1514, false}, {1514, true}, {1515, false}, {1515, true}, {9014, false}},
			[]int{1514, 1518}, 3, 0, []int{1515}},
		{"jumbo port of the device's mtu", 9000, nic.Config{MTU: 9000}, true,
			[]frame{{9014, false}, {9014, true}, {9015, false}},
			[]int{9014, 9018}, 1, 0, []int{9015}},
		{"port mtu under the device's, buffers for the device's", 9000, nic.Config{MTU: 8000, BufSize: 10240}, true,
			[]frame{{8014, false}, {8014, true}, {8015, false}, {8015, true}, {9014, false}, {9015, false}},
			[]int{8014, 8018}, 1, 3, []int{8015, 9014}},
		{"standard port on a standard device", 1500, nic.Config{}, true,
			[]frame{{1514, false}, {1515, false}}, []int{1514}, 1, 0, []int{1515}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.RxRing, tt.cfg.TxRing, tt.cfg.Interrupts = 16, 16, nic.IRQNone
			h, p := openTest(t, simvirtio.Config{MTU: tt.devMTU}, tt.cfg, Options{})
			if got := p.has(virtiospec.FeatMTU); got != tt.feature {
				t.Fatalf("VIRTIO_NET_F_MTU negotiated %v, want %v", got, tt.feature)
			}
			rng := rand.New(rand.NewPCG(3, uint64(tt.devMTU)))
			mk := func(n int) []byte {
				return nictest.Frame(rng, nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, n)
			}
			for _, f := range tt.frames {
				b := mk(f.n)
				if f.tagged {
					b = nictest.Tagged(b, 5)
				}
				if err := h.Peer.Send(b); err != nil {
					t.Fatal(err)
				}
			}
			bufs := make([]*nic.Buf, 16)
			n := p.RxBurst(0, bufs)
			var got []int
			for _, b := range bufs[:n] {
				got = append(got, b.Len())
				b.Free()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("received frames of %v bytes, want %v", got, tt.want)
			}
			if tl := h.Virtio().Stats().Oversize; tl != tt.tooLong {
				t.Errorf("device dropped %d frames as too long, want %d", tl, tt.tooLong)
			}
			if e := p.Stats().RxErrors; e != tt.rxErrors {
				t.Errorf("port counted %d RX errors, want %d", e, tt.rxErrors)
			}
			// Send: a frame of the port's MTU goes out, longer ones are refused and counted.
			plain := p.cfg.MTU + nic.EthHeader
			out := append([]int{plain}, tt.txRefused...)
			for _, l := range out {
				b := p.rx[0].pool.Get()
				b.SetLen(copy(b.Data(), mk(l)))
				if sent := p.TxBurst(0, []*nic.Buf{b}); sent != 1 {
					t.Fatalf("TxBurst of %d bytes took %d, want 1", l, sent)
				}
			}
			back := h.Received()
			if len(back) != 1 || len(back[0]) != plain {
				t.Errorf("%d frames on the wire, want 1 of %d bytes", len(back), plain)
			}
			if e := p.Stats().TxErrors; e != uint64(len(tt.txRefused)) {
				t.Errorf("%d TX errors, want %d (frames of %v bytes refused)", e, len(tt.txRefused), tt.txRefused)
			}
		})
	}
}

// TestRxBufferTooSmallIsFault posts, behind the driver's back, a receive buffer smaller
// than VIRTIO_NET_F_MTU promised: the strict model records a fault and delivers nothing.
func TestRxBufferTooSmallIsFault(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{MTU: 9000}, nic.Config{MTU: 9000, RxRing: 16, TxRing: 16, Interrupts: nic.IRQNone}, Options{})
	h.FaultsOK = true
	p.rx[0].ring.setDescBuf(1, p.rx[0].bufs[0].IOVA(), 2048) // slot 0's buffer, the first the device takes
	h.Send(0)
	rng := rand.New(rand.NewPCG(4, 4))
	if err := h.Peer.Send(nictest.Frame(rng, nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 4000)); err != nil {
		t.Fatal(err)
	}
	if err := h.Dev.Err(); err == nil {
		t.Fatal("a 2048-byte receive buffer for a 4000-byte frame within mtu 9000: no model fault")
	}
	if st := h.Virtio().Stats(); st.RxFrames != 0 {
		t.Fatalf("model %+v: delivered a frame into a buffer too small for it", st)
	}
}
