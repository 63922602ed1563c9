package igbvf

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/igbvf"
)

// vfModel is the VF model behind h.
func vfModel(h *nictest.Harness) *igbvf.Model { return h.Model.(nictest.IGBVFModel).Model }

// echo checks that the port receives n frames from the peer and sends them back.
func echo(t *testing.T, h *nictest.Harness, n int) {
	t.Helper()
	h.Received()
	h.Send(n)
	bufs := make([]*nic.Buf, n)
	got := 0
	testutil.WaitFor(time.Second, func() bool {
		got += h.Port.RxBurst(0, bufs[got:])
		return got == n
	})
	if got != n {
		t.Fatalf("received %d of %d frames (port %+v, model %+v)", got, n, h.Port.Stats(), vfModel(h).Stats())
	}
	if sent := h.Port.TxBurst(0, bufs); sent != n {
		t.Fatalf("sent %d of %d", sent, n)
	}
	testutil.Eventually(t, time.Second, func() bool { return len(h.Received()) == n }, "peer did not get the %d frames back", n)
}

// TestPFEvents checks that the port re-initialises itself after what a PF does to its
// VF, counts it, and forwards again on the same rings, without the caller reopening it.
func TestPFEvents(t *testing.T) {
	newMAC := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	tests := []struct {
		name    string
		event   func(m *igbvf.Model)
		resets  bool // the port must re-initialise
		wantMAC net.HardwareAddr
	}{
		{"pf reset", func(m *igbvf.Model) { m.ResetPF(20 * time.Millisecond) }, true, nil},
		{"pf down then up", func(m *igbvf.Model) {
			m.PFDown()
			time.Sleep(300 * time.Millisecond) // longer than the VF reset's wait: retries
			m.PFUp()
		}, true, nil},
		// Linux's igb tells the VF nothing of an administrator's MAC: the port takes the
		// new address at the next PF event.
		{"administrator sets the MAC, then a pf reset", func(m *igbvf.Model) {
			m.SetAdminMAC(newMAC)
			m.ResetPF(10 * time.Millisecond)
		}, true, newMAC},
		{"link flap", func(m *igbvf.Model) { m.FlapLink(5 * time.Millisecond) }, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nictest.New(t, driver, nic.Config{RxRing: 64, TxRing: 64})
			m := vfModel(h)
			echo(t, h, 8)
			before := h.Port.Stats()
			tt.event(m)
			if tt.resets {
				testutil.Eventually(t, 5*time.Second, func() bool {
					return recoverStep(h) && h.Port.Stats().DeviceResets > before.DeviceResets && h.Port.Link().Up
				}, "no re-initialisation: %+v, link %+v, last error %v", h.Port.Stats(), h.Port.Link(), Rings(h).ReinitError())
			} else {
				testutil.Eventually(t, time.Second, func() bool { return h.Port.LinkChanges() >= 2 && h.Port.Link().Up },
					"link changes %d, link %+v", h.Port.LinkChanges(), h.Port.Link())
				if r := h.Port.Stats().DeviceResets; r != 0 {
					t.Errorf("%d re-initialisations for a link change", r)
				}
			}
			if tt.wantMAC != nil && !bytes.Equal(h.Port.MAC(), tt.wantMAC) {
				t.Errorf("MAC %v after the event, want %v", h.Port.MAC(), tt.wantMAC)
			}
			if !m.CTS() {
				t.Error("the PF does not have the VF clear to send")
			}
			echo(t, h, 8)
		})
	}
}

// TestNoMACFromPF checks a VF the PF has no address for (VF_RESET answered NACK): the
// port picks a random locally administered address, the PF takes it (SET_MAC_ADDR), and
// the port keeps it across a PF reset.
func TestNoMACFromPF(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{NoAntiSpoof: true, NoMAC: true})
	h := nictest.New(t, drv, nic.Config{})
	mac := h.Port.MAC()
	if len(mac) != 6 || mac[0]&1 != 0 || mac[0]&2 == 0 {
		t.Fatalf("MAC %v: want a unicast, locally administered address", mac)
	}
	if m := vfModel(h).MAC(); !bytes.Equal(m, mac) {
		t.Fatalf("the PF has %v for the VF, the port %v", m, mac)
	}
	echo(t, h, 4)
	vfModel(h).ResetPF(10 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up }, "no re-initialisation")
	if !bytes.Equal(h.Port.MAC(), mac) {
		t.Errorf("MAC %v after the PF reset, was %v", h.Port.MAC(), mac)
	}
	echo(t, h, 4)
}

// Rings is the igbvf port behind h.
func Rings(h *nictest.Harness) *Port { return nictest.DriverPort(h.Port).(*Port) }

// recoveries holds each test port's nic.Recovery: a test's goroutine owns the port's
// queues, so it runs the Recover the port asks for itself, between its bursts, as the
// dataplane does between two turns of its threads.
var recoveries sync.Map // *Port → *nic.Recovery

// recovery is the Recovery of the port behind h, made (and registered) at the first call.
func recovery(h *nictest.Harness) *nic.Recovery {
	p := Rings(h)
	if r, ok := recoveries.Load(p); ok {
		return r.(*nic.Recovery)
	}
	r := nic.NewRecovery(p, nil)
	recoveries.Store(p, r)
	return r
}

// recoverStep runs the Recover of the port behind h if it asked for one or a retry after
// a failed one is due. It returns true, to be put in a condition's &&.
func recoverStep(h *nictest.Harness) bool {
	_, _ = recovery(h).Poll(nil)
	return true
}

// TestResetsCountedOnce checks that a PF that stays down through many attempts to
// re-initialise counts as one re-initialisation, and that the attempts follow the
// port's backoff (each wait at least the one before).
func TestResetsCountedOnce(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{})
	m := vfModel(h)
	rc := recovery(h)
	m.PFDown()
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && Rings(h).ReinitError() != nil }, "no failed attempt while the PF is down")
	var waits []time.Duration
	testutil.Eventually(t, 10*time.Second, func() bool {
		if ran, err := rc.Poll(nil); ran && err != nil {
			waits = append(waits, time.Until(rc.RetryAt()))
		}
		_, fails := rc.Counts()
		return fails >= 4 // several more attempts
	}, "attempts while the PF is down: %v", waits)
	for i := 1; i < len(waits); i++ {
		if waits[i] < waits[i-1] {
			t.Errorf("retry waits %v: want each at least the one before", waits)
		}
	}
	m.PFUp()
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && Rings(h).ReinitError() == nil && h.Port.Link().Up }, "no re-initialisation after the PF came up: %v", Rings(h).ReinitError())
	if n := h.Port.Stats().DeviceResets; n != 1 {
		t.Errorf("%d re-initialisations counted for one PF reset", n)
	}
	echo(t, h, 4)
}

// TestReinitWakesSleeper checks that a poll thread asleep on the RX vector when the PF
// resets the VF is woken once the port is back: the VF reset masked the cause it was
// armed on.
func TestReinitWakesSleeper(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQMSIX})
	v := h.Port.RxVector(0)
	h.Port.EnableRxInterrupt(0)
	testutil.Drain(t, v)
	vfModel(h).ResetPF(10 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up }, "no re-initialisation")
	if nictest.WaitFired(t, v) == 0 {
		t.Fatal("the armed RX vector did not fire after the re-initialisation")
	}
	h.Send(1)
	if nictest.WaitFired(t, v) == 0 && h.Consume(0) == 0 {
		t.Fatal("RX interrupt not armed after the re-initialisation")
	}
}

// TestAntiSpoof checks the PF's MAC anti-spoof check on the strict model: the VF sends
// frames from its own address, and the PF drops (and counts) frames from any other.
func TestAntiSpoof(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{})
	h := nictest.New(t, drv, nic.Config{})
	m := vfModel(h)
	pool := h.Port.RxPool(0)
	for _, tt := range []struct {
		name string
		src  net.HardwareAddr
		out  bool
	}{
		{"own address", h.Port.MAC(), true},
		{"another address", net.HardwareAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, false},
	} {
		b := pool.Get()
		f := b.Data()[:64]
		copy(f, nictest.Broadcast)
		copy(f[6:], tt.src)
		b.SetLen(64)
		spoofed := m.Stats().Spoofed
		h.Received()
		if h.Port.TxBurst(0, []*nic.Buf{b}) != 1 {
			t.Fatalf("%s: not queued", tt.name)
		}
		nictest.Rings(h.Port).TxQueue(0).Reclaim()
		testutil.WaitFor(100*time.Millisecond, func() bool { return len(h.Received()) > 0 || m.Stats().Spoofed > spoofed })
		if got := m.Stats().Spoofed > spoofed; got == tt.out {
			t.Errorf("%s: spoofed %v, want %v", tt.name, got, !tt.out)
		}
	}
}
