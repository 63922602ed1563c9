package virtio

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// kickDropper is a BAR whose writes to one notify address are lost: a driver that drops
// the receive queue's notification.
type kickDropper struct {
	NarrowRegion
	off uint32
}

func (r kickDropper) Write16(off uint32, v uint16) {
	if off == r.off {
		return
	}
	r.NarrowRegion.Write16(off, v)
}

// TestRxHeldUntilKick fills a receive ring past its end: the model (as QEMU) holds the
// frames that found it empty and delivers them only when the driver posts buffers and
// notifies the queue. With the notification dropped they stay held.
func TestRxHeldUntilKick(t *testing.T) {
	const ring, sent = 32, 80
	for _, dropKick := range []bool{false, true} {
		for _, m := range eventModes {
			t.Run(m.name+map[bool]string{false: "/kick", true: "/kick_dropped"}[dropKick], func(t *testing.T) {
				h, p := openTest(t, m.mc, nic.Config{RxRing: ring, TxRing: ring, Interrupts: nic.IRQNone}, m.opt)
				vm := h.Virtio()
				if dropKick {
					q := p.rx[0]
					orig := q.t.notify.r
					q.t.notify.r = kickDropper{orig, q.notifyOff + q.t.notify.base}
					defer func() { q.t.notify.r = orig }()
				}
				h.Send(sent)
				got := 0
				want := sent
				if dropKick {
					want = ring
				}
				testutil.WaitFor(5*time.Second, func() bool { got += h.Consume(0); return got >= want && vm.Stats().Held == sent-ring })
				if dropKick {
					// A frame that arrives now must queue behind the held ones: only the
					// notification resumes delivery.
					h.Send(1)
					got += h.Consume(0)
				}
				st := vm.Stats()
				if dropKick {
					if got != ring || st.Held != sent-ring+1 || st.Missed != 0 {
						t.Fatalf("kick dropped: received %d, model held %d missed %d: want %d received and the rest held", got, st.Held, st.Missed, ring)
					}
					return
				}
				if got != sent || st.Missed != 0 {
					t.Fatalf("received %d of %d (model %+v)", got, sent, st)
				}
			})
		}
	}
}

// TestZeroLengthDescriptorBreaksDevice posts a zero-length receive buffer behind the
// driver's back: the model (as QEMU's virtio_error) sets DEVICE_NEEDS_RESET, and the
// driver recovers and forwards again.
func TestZeroLengthDescriptorBreaksDevice(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	h.FaultsOK = true // the zero-length descriptor is a recorded driver fault
	vm := h.Virtio()
	binary.LittleEndian.PutUint32(p.rx[0].ring.mem.Bytes[16*1+8:], 0) // slot 0's buffer, the first the device takes
	h.Send(1)
	if st := vm.Stats(); st.NeedsReset != 1 || st.RxFrames != 0 {
		t.Fatalf("model %+v: want NEEDS_RESET raised and nothing received", st)
	}
	rc := nic.NewRecovery(p, nil)
	if l := p.Link(); l.Up {
		t.Fatal("link up on a broken device")
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		_, _ = rc.Poll(nil) // the test goroutine owns the queues
		return p.Link().Up && p.Stats().DeviceResets == 1
	}, "no recovery: %v", p.RecoverError())
	p.rx[0].ring.setDescBuf(1, p.rx[0].bufs[0].IOVA(), uint32(p.rx[0].bufs[0].Cap()))
	forwardBack(t, h, p, 3)
}
