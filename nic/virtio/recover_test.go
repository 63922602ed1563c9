package virtio

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestNeedsResetRecovery breaks a running device (DEVICE_NEEDS_RESET, as QEMU's
// virtio_error) on each path the driver watches: the MSI-X configuration vector, the
// ISR's configuration bit under INTx, and the status read on the link path. The port must
// report the link down and ask for Recover, which the test runs between its own bursts
// (nic.Recovery, as the dataplane does between turns); Recover resets and re-initialises
// the device (counted), and the port forwards again on both queue pairs, with no buffer
// lost.
func TestNeedsResetRecovery(t *testing.T) {
	tests := []struct {
		name   string
		mc     simvirtio.Config
		cfg    nic.Config
		detect func(p *Port) // what the port's user does until the reset is done
	}{
		{"msix config vector", simvirtio.Config{}, nic.Config{Interrupts: nic.IRQMSIX}, func(*Port) {}},
		{"intx isr", simvirtio.Config{NoMSIX: true}, nic.Config{Interrupts: nic.IRQINTx}, func(p *Port) { p.EnableRxInterrupt(0) }},
		{"link read", simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, func(p *Port) {
			if l := p.Link(); l.Up && p.Stats().DeviceResets == 0 {
				t.Errorf("link %+v reported up on a device that needs a reset", l)
			}
		}},
	}
	for _, tt := range tests {
		for _, m := range eventModes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				mc := tt.mc
				mc.NoEventIdx = m.mc.NoEventIdx
				cfg := tt.cfg
				cfg.RxQueues, cfg.TxQueues = 2, 2
				h, p := openTest(t, mc, cfg, m.opt)
				rc := nic.NewRecovery(p, nil)
				vm := h.Virtio()
				forwardBack(t, h, p, 4)
				resetsBefore := vm.Stats().Resets
				vm.RaiseNeedsReset()
				if !testutil.Eventually(t, 5*time.Second, func() bool {
					tt.detect(p)
					if _, err := rc.Poll(nil); err != nil {
						t.Errorf("recover: %v", err)
					}
					return p.Stats().DeviceResets == 1
				},
					"device resets %d, want 1 (model %+v)", p.Stats().DeviceResets, vm.Stats()) {
					t.FailNow()
				}
				testutil.Eventually(t, 5*time.Second, func() bool { return p.Link().Up }, "link down after the recovery: %v", p.RecoverError())
				if err := p.RecoverError(); err != nil {
					t.Fatal(err)
				}
				if st := vm.Stats(); st.Resets <= resetsBefore || st.NeedsReset != 1 {
					t.Errorf("model %+v: want one NEEDS_RESET and a reset after it", st)
				}
				if vm.Pairs() != 2 {
					t.Errorf("model uses %d queue pairs after the recovery, want 2", vm.Pairs())
				}
				forwardBack(t, h, p, 4)
				if p.Stats().DeviceResets != 1 {
					t.Errorf("device resets %d, want 1", p.Stats().DeviceResets)
				}
			})
		}
	}
}

// TestNeedsResetInFlight breaks the device while transmitted frames are still the
// device's (the queue not yet reclaimed): the recovery discards them, the queue's next
// burst frees their buffers and counts them, and the queue takes frames again.
func TestNeedsResetInFlight(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	rc := nic.NewRecovery(p, nil)
	vm := h.Virtio()
	h.Send(4)
	bufs := make([]*nic.Buf, 4)
	got := 0
	if !testutil.Eventually(t, 5*time.Second, func() bool { got += p.RxBurst(0, bufs[got:]); return got == 4 }, "received %d of 4", got) {
		t.FailNow()
	}
	vm.RaiseNeedsReset() // the device completes nothing from here on
	if n := p.TxBurst(0, bufs); n != 4 {
		t.Fatalf("TxBurst took %d of 4", n)
	}
	if p.TxPending(0) != 4 {
		t.Fatalf("%d pending, want 4", p.TxPending(0))
	}
	if n := p.TxPending(0); n != 4 {
		t.Fatalf("%d pending before the recovery ran, want 4", n)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		_, _ = rc.Poll(nil)
		return p.Link().Up && p.Stats().DeviceResets == 1
	}, "no recovery: %v", p.RecoverError())
	if n := p.TxPending(0); n != 0 {
		t.Errorf("%d pending after the reset, want 0", n)
	}
	p.TxBurst(0, nil)
	if st := p.Stats(); st.TxErrors != 4 {
		t.Errorf("stats %+v, want the 4 discarded frames in TxErrors", st)
	}
	forwardBack(t, h, p, 4)
}

// TestRecoverFails checks a reset that does not bring the device back (the features it
// negotiates differ from those before, made so by changing the port's record of them):
// Recover fails and says why, the queues take and give nothing,
// the link stays down, the port does not ask again before retryAfter, and a later
// Recover on a device that works again brings the port back with every buffer.
func TestRecoverFails(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	asked := make(chan struct{}, 16)
	p.OnRecoverNeeded(func() { asked <- struct{}{} })
	vm := h.Virtio()
	forwardBack(t, h, p, 2)
	vm.RaiseNeedsReset()
	if p.Link().Up {
		t.Fatal("link up on a broken device")
	}
	if len(asked) == 0 {
		t.Fatal("the port did not ask for Recover")
	}
	p.features ^= 1 << 63 // what the reset's negotiation is compared with
	err := p.Recover()
	if err == nil || p.RecoverError() == nil {
		t.Fatalf("Recover %v, RecoverError %v: want the refused features", err, p.RecoverError())
	}
	for len(asked) > 0 {
		<-asked
	}
	if p.Link().Up {
		t.Error("link up after a failed recovery")
	}
	if len(asked) != 0 {
		t.Error("the port asked again within retryAfter of a failed recovery")
	}
	h.Send(2)
	bufs := make([]*nic.Buf, 4)
	if n := p.RxBurst(0, bufs); n != 0 {
		t.Errorf("received %d frames on a port whose recovery failed", n)
	}
	if n := p.TxBurst(0, bufs[:0]); n != 0 || p.TxPending(0) != 0 {
		t.Errorf("TxBurst %d, TxPending %d on a stopped port", n, p.TxPending(0))
	}
	if err := p.Recover(); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	if !p.Link().Up || p.RecoverError() != nil || p.Stats().DeviceResets != 2 {
		t.Fatalf("after the second Recover: link %+v, error %v, resets %d (want up, nil, 2)", p.Link(), p.RecoverError(), p.Stats().DeviceResets)
	}
	forwardBack(t, h, p, 2)
}
