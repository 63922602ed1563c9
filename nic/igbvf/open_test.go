package igbvf

import (
	"bytes"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/igbvf"
)

// onModel is driver with before run on each model as it is made, before the port opens.
func onModel(base igbvf.Config, before func(m *igbvf.Model)) nictest.Driver {
	drv := driver
	drv.Family = nictest.IGBVF(base)
	newModel := drv.Family.New
	drv.Family.New = func(mc nictest.ModelConfig) (nictest.Model, error) {
		m, err := newModel(mc)
		if err == nil {
			before(m.(nictest.IGBVFModel).Model)
		}
		return m, err
	}
	return drv
}

// hooked is driver opening its device through hooks.
func hooked(drv nictest.Driver, hooks func(h *nictest.Hooks)) nictest.Driver {
	open := drv.Open
	drv.Open = func(dev pci.Device, cfg nic.Config) (nictest.Port, error) {
		var h nictest.Hooks
		hooks(&h)
		return open(nictest.Hooked(dev, h), cfg)
	}
	return drv
}

// TestOpenPFDown checks a port opened while its PF is in reset (RSTI held until the PF's
// interface is up: boot ordering): Open succeeds at once with the link down, and the
// port comes up by itself once the PF does, without counting a re-initialisation.
// Before, Open failed ("RSTI/RSTD still set after 200ms") and the daemon with it.
func TestOpenPFDown(t *testing.T) {
	tests := []struct {
		name string
		cfg  igbvf.Config
	}{
		{"administrator's MAC", igbvf.Config{NoAntiSpoof: true}},
		{"no MAC for the VF", igbvf.Config{NoAntiSpoof: true, NoMAC: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drv := onModel(tt.cfg, (*igbvf.Model).PFDown)
			h := nictest.New(t, drv, nic.Config{RxRing: 64, TxRing: 64, LinkTimeout: time.Second})
			p := Rings(h)
			if h.Port.Link().Up {
				t.Fatal("link up with the PF in reset")
			}
			if err := p.ReinitError(); !errors.Is(err, errPFReset) {
				t.Errorf("ReinitError %v, want the PF in reset", err)
			}
			if n := h.Port.RxBurst(0, make([]*nic.Buf, 4)); n != 0 {
				t.Errorf("received %d frames with the PF down", n)
			}
			vfModel(h).PFUp()
			testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Link().Up && p.ReinitError() == nil },
				"the port did not come up with the PF: %v", p.ReinitError())
			if n := h.Port.Stats().DeviceResets; n != 0 {
				t.Errorf("%d re-initialisations counted for the open", n)
			}
			if !bytes.Equal(h.Port.MAC(), vfModel(h).MAC()) {
				t.Errorf("port MAC %v, the PF has %v", h.Port.MAC(), vfModel(h).MAC())
			}
			echo(t, h, 8)
		})
	}
}

// TestRetryBackoff checks a port whose PF stays down: its user's attempts to
// re-initialise it come at a growing interval (doubling from 50 ms to 10 s; before, every
// 250 ms), and the VF is reset once, not at every attempt (an attempt that finds RSTI
// still held fails at once: the dataplane's threads wait while it runs). Both are upper
// bounds, which a loaded machine (fewer attempts) cannot fail.
func TestRetryBackoff(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{})
	m := vfModel(h)
	rc := recovery(h)
	before := m.Stats().VFResets
	m.PFDown()
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		recoverStep(h) // the attempts the port's user makes: the backoff is nic.Recovery's
		time.Sleep(5 * time.Millisecond)
	}
	resets, elapsed := m.Stats().VFResets-before, time.Since(start)
	runs, fails := rc.Counts()
	if limit := uint64(2 + math.Log2(float64(elapsed/retryInterval))); runs > limit {
		t.Errorf("%d attempts in %v with the PF down, want at most %d", runs, elapsed, limit)
	}
	if resets > 1 {
		t.Errorf("%d VF resets in %v with the PF down, want at most one", resets, elapsed)
	}
	t.Logf("%d attempts (%d failed), %d VF resets in %v", runs, fails, resets, elapsed)
	m.PFUp()
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Link().Up }, "no recovery: %v", Rings(h).ReinitError())
	echo(t, h, 4)
}

// TestRequestFlushedByPing checks a PF message written over the VF's request before the
// PF took it (Linux's igb flushes the request: it is never answered): the port sends it
// again and the open goes through. Before, the request waited 1 s for PFACK and the
// open failed.
func TestRequestFlushedByPing(t *testing.T) {
	var armed, done atomic.Bool
	var model atomic.Pointer[igbvf.Model]
	drv := onModel(igbvf.Config{NoAntiSpoof: true, MailboxDelay: 5 * time.Millisecond}, func(m *igbvf.Model) { model.Store(m) })
	drv = hooked(drv, func(hk *nictest.Hooks) {
		hk.Write = func(bar int, off uint32, v uint64, size int) bool {
			if off == i82576.VFMbxMem && uint32(v) == i82576.MsgVFReset {
				armed.Store(true)
			}
			return true
		}
		hk.Read = func(bar int, off, v uint32) uint32 {
			// The first look for PFACK after VF_RESET's REQ: the PF writes first.
			if off == i82576.V2PMailbox && armed.Load() && !done.Swap(true) {
				model.Load().SetLink(true)
			}
			return v
		}
	})
	h := nictest.New(t, drv, nic.Config{})
	if !done.Load() {
		t.Fatal("the hook did not run")
	}
	if n := vfModel(h).Stats().Flushed; n != 1 {
		t.Fatalf("%d requests flushed, want the VF_RESET", n)
	}
	if !h.Port.Link().Up || Rings(h).ReinitError() != nil {
		t.Fatalf("open did not finish its handshake: link %+v, %v", h.Port.Link(), Rings(h).ReinitError())
	}
	echo(t, h, 4)
}

// TestMessageBeforeInterrupts checks a PF message that arrives between the handshake and
// the VTEICR write that clears the causes: the watcher looks at the mailbox once after
// it, so the message is seen at once (before: at the watcher's next tick, 2 s later).
func TestMessageBeforeInterrupts(t *testing.T) {
	saved := watchInterval
	watchInterval = time.Hour
	t.Cleanup(func() { watchInterval = saved })
	var model atomic.Pointer[igbvf.Model]
	var done atomic.Bool
	drv := onModel(igbvf.Config{NoAntiSpoof: true}, func(m *igbvf.Model) { model.Store(m) })
	drv = hooked(drv, func(hk *nictest.Hooks) {
		hk.Write = func(bar int, off uint32, v uint64, size int) bool {
			if off == i82576.VTEICR && uint32(v) == 1<<i82576.VFVectors-1 && !done.Swap(true) {
				model.Load().SetLink(true) // a link change the PF announces
			}
			return true
		}
	})
	h := nictest.New(t, drv, nic.Config{Interrupts: nic.IRQMSIX})
	testutil.Eventually(t, 5*time.Second, func() bool { return h.Port.LinkChanges() > 0 },
		"the PF's message before the interrupts were programmed was not seen")
}

// TestPFMessage checks what a PF message that is no reply does: without CTS (a PF
// reset's control message, Linux's bare NACK) the port re-initialises; a control message
// with CTS is a link change; a late ACK or NACK with CTS (a reply to a request that
// timed out) changes nothing (before, a late NACK re-initialised the port).
func TestPFMessage(t *testing.T) {
	tests := []struct {
		name       string
		w0         uint32
		reinit     bool
		linkChange bool
	}{
		{"control message without CTS", i82576.MsgPFControl, true, false},
		{"bare NACK", i82576.MsgNack, true, false},
		{"link change", i82576.MsgPFControl | i82576.MsgCTS, false, true},
		{"late NACK", i82576.MsgSetLPE | i82576.MsgNack | i82576.MsgCTS, false, false},
		{"late ACK", i82576.MsgSetMcast | i82576.MsgAck | i82576.MsgCTS, false, false},
		{"NACK without CTS", i82576.MsgSetLPE | i82576.MsgNack, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Port
			p.pfMessage(tt.w0)
			if p.needReinit != tt.reinit || (p.core.LinkChanges() > 0) != tt.linkChange {
				t.Errorf("re-initialise %v, link change %v; want %v, %v", p.needReinit, p.core.LinkChanges() > 0, tt.reinit, tt.linkChange)
			}
		})
	}
}

// TestZeroMACFromPF checks a PF that ACKs VF_RESET with a zero address: the port takes a
// random locally administered one and has the PF set it, as Linux's igbvf does (before,
// Open failed: "not a unicast one").
func TestZeroMACFromPF(t *testing.T) {
	var resetReply atomic.Bool
	drv := hooked(onModel(igbvf.Config{NoAntiSpoof: true, NoMAC: true}, func(*igbvf.Model) {}), func(hk *nictest.Hooks) {
		hk.Read = func(bar int, off, v uint32) uint32 {
			if off == i82576.VFMbxMem {
				resetReply.Store(v&i82576.MsgTypeMask == i82576.MsgVFReset)
				if resetReply.Load() && v&i82576.MsgNack != 0 {
					v = v&^i82576.MsgNack | i82576.MsgAck // an ACK, with the model's zero address
				}
			}
			return v
		}
	})
	h := nictest.New(t, drv, nic.Config{})
	mac := h.Port.MAC()
	if len(mac) != 6 || mac[0]&3 != 2 {
		t.Fatalf("MAC %v: want a unicast, locally administered address", mac)
	}
	if !bytes.Equal(vfModel(h).MAC(), mac) {
		t.Errorf("the PF has %v for the VF, the port %v", vfModel(h).MAC(), mac)
	}
}

// TestOpenAsLinuxIGBVF checks two things the open does as Linux's igbvf: it sends no API
// negotiation (Linux's igb PF logs "Unhandled Msg 00000008" for one), and it turns
// relaxed ordering of the TX descriptor write-backs off (igbvf_configure_tx).
func TestOpenAsLinuxIGBVF(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{})
	if n := vfModel(h).Stats().Unhandled; n != 0 {
		t.Errorf("%d messages the PF does not know", n)
	}
	if v := Rings(h).bar.Read32(i82576.VFTXBase + i82576.QDCATX); v&i82576.DcaTxctlTxWBRO != 0 {
		t.Errorf("DCA_TXCTRL %#x: TX write-back relaxed ordering on", v)
	}
}
