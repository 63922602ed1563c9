package igbvf

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
)

// TestWatcherIdle checks what an idle VF port's PF-event watcher costs: it wakes by its
// timer at most once a second (each wake of an idle process also wakes the Go runtime),
// the interrupt being what brings PF events. The count is an upper bound of the time
// that passed, so a loaded machine (a ticker that fires late) cannot fail it.
func TestWatcherIdle(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQMSIX})
	p := Rings(h)
	before, start := p.timerWakes.Load(), time.Now()
	time.Sleep(1500 * time.Millisecond)
	wakes, elapsed := p.timerWakes.Load()-before, time.Since(start)
	if limit := uint64(elapsed/time.Second) + 1; wakes > limit {
		t.Errorf("the PF-event watcher woke %d times by its timer in %v of an idle port: want at most one a second (%d)", wakes, elapsed, limit)
	}
	t.Logf("%d timer wake-ups in %v", wakes, elapsed)
}

// TestPFEventsByInterrupt checks that the PF's events reach the port through the mailbox
// interrupt alone: with the watcher's timer an hour long, a PF reset and a PF down and
// up re-initialise the port, and a link change the PF announces is counted.
func TestPFEventsByInterrupt(t *testing.T) {
	saved := watchInterval
	watchInterval = time.Hour
	t.Cleanup(func() { watchInterval = saved })
	tests := []struct {
		name   string
		event  func(h *nictest.Harness)
		resets bool
	}{
		{"pf reset", func(h *nictest.Harness) { vfModel(h).ResetPF(10 * time.Millisecond) }, true},
		{"pf down then up", func(h *nictest.Harness) {
			vfModel(h).PFDown()
			time.Sleep(300 * time.Millisecond)
			vfModel(h).PFUp()
		}, true},
		{"link flap", func(h *nictest.Harness) { vfModel(h).FlapLink(5 * time.Millisecond) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQMSIX, RxRing: 64, TxRing: 64})
			echo(t, h, 4)
			tt.event(h)
			if tt.resets {
				testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up },
					"no re-initialisation without the watcher's timer: %+v, last error %v", h.Port.Stats(), Rings(h).ReinitError())
			} else {
				testutil.Eventually(t, 5*time.Second, func() bool { return h.Port.LinkChanges() >= 2 && h.Port.Link().Up },
					"link changes %d without the watcher's timer", h.Port.LinkChanges())
			}
			if w := Rings(h).timerWakes.Load(); w != 0 {
				t.Errorf("the watcher's hour-long timer woke %d times", w)
			}
			echo(t, h, 4)
		})
	}
}

// TestPFEventWithoutInterrupt checks the watcher's timer, what covers a PF reset that
// raises no mailbox interrupt: with the mailbox cause masked, a PF reset still
// re-initialises the port, found by the timer.
func TestPFEventWithoutInterrupt(t *testing.T) {
	saved := watchInterval
	watchInterval = 20 * time.Millisecond
	t.Cleanup(func() { watchInterval = saved })
	h := nictest.New(t, driver, nic.Config{Interrupts: nic.IRQMSIX, RxRing: 64, TxRing: 64})
	p := Rings(h)
	echo(t, h, 4)
	// The watcher looks at the mailbox once after open (programInterrupts): wait for
	// that look, so that only the timer can find the reset.
	testutil.Eventually(t, 5*time.Second, func() bool { return p.looks.Load() > 0 && len(p.kick) == 0 }, "the watcher did not look at the mailbox after open")
	p.bar.Write32(i82576.VTEIMC, 1<<mbxVector)
	vfModel(h).ResetPF(10 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up },
		"no re-initialisation by the watcher's timer: %+v, last error %v", h.Port.Stats(), p.ReinitError())
	if p.timerWakes.Load() == 0 {
		t.Error("the re-initialisation came without a timer wake-up: the mailbox cause was not masked")
	}
	echo(t, h, 4)
}
