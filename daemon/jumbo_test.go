package daemon

import (
	"bytes"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestDaemonJumbo runs l2fwd between two sim ports at mtu 9000 on each Intel model and
// on virtio-net (whose model then reports mtu 9000, VIRTIO_NET_F_MTU):
// frames of 1514, 1515, 4096 and 9014 bytes, and one of 9018 with a VLAN tag, come out
// of the other port byte for byte; one of 9015 bytes (untagged, one over) does not, and
// the port counts it (the Intel ports; the virtio-net device drops it uncounted). The
// frames are sent in that order, each after the one before came out, so that what is
// missing is known.
func TestDaemonJumbo(t *testing.T) {
	for _, model := range []string{"ixgbe", "igb", "virtio"} {
		t.Run(model, func(t *testing.T) {
			name := "jumbo" + model
			cfg := simNICConfig(t, name, model, ", mtu: 9000")
			d, _ := startDaemon(t, cfg)
			c := openWireEnds(t, name, 2)
			gen := c.gen
			received := func() int { return c.count(1) }
			frame := func(n int, tag bool) []byte {
				f := make([]byte, n)
				copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 9})
				body := 12
				if tag {
					f[12], f[13], f[14], f[15] = 0x81, 0x00, 0x00, 0x0a
					body = 16
				}
				f[body], f[body+1] = 0x88, 0xb5 // local experimental ethertype
				for i := body + 2; i < n; i++ {
					f[i] = byte(i * 7)
				}
				return f
			}
			for _, tt := range []struct {
				n   int
				tag bool
			}{{1514, false}, {1515, false}, {4096, false}, {9014, false}, {9018, true}} {
				want := received() + 1
				f := frame(tt.n, tt.tag)
				if err := gen[0].Send(f); err != nil {
					t.Fatal(err)
				}
				if !testutil.WaitFor(10*time.Second, func() bool { return received() >= want }) {
					t.Fatalf("a frame of %d bytes (tagged %v) did not come out at mtu 9000: status %+v", tt.n, tt.tag, d.Status().Ports)
				}
				var got []byte
				c.frames(func(out [][][]byte) { got = out[1][len(out[1])-1] })
				if !bytes.Equal(got, f) {
					t.Errorf("a frame of %d bytes came out as %d bytes with other contents", tt.n, len(got))
				}
			}
			before := d.Status().Ports[0].Stats
			if err := gen[0].Send(frame(9015, false)); err != nil {
				t.Fatal(err)
			}
			// The virtio-net device drops it itself (it must not deliver a frame over its
			// mtu) and has no counter to report that; the Intel ports count it.
			if model != "virtio" && !testutil.WaitFor(10*time.Second, func() bool {
				s := d.Status().Ports[0].Stats
				return s.RxErrors > before.RxErrors || s.RxMissed > before.RxMissed
			}) {
				t.Errorf("the frame of 9015 bytes was not counted at port a: before %+v, now %+v", before, d.Status().Ports[0].Stats)
			}
			time.Sleep(50 * time.Millisecond) // what would have come out by now
			if n := received(); n != 5 {
				t.Errorf("%d frames came out, want 5: the one of 9015 bytes must not", n)
			}
		})
	}
}
