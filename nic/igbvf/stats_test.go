package igbvf

import (
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

// TestStatsAcrossPFEvents checks the port's counters across a PF reset that clears the
// VF's statistics registers (as QEMU's does): the frames before and after it are
// counted once each, none 2³² times (before: RxPackets 4294967304 after 16 frames), and
// the frames sent and completed before the reset are not TxErrors (before: 8).
func TestStatsAcrossPFEvents(t *testing.T) {
	tests := []struct {
		name  string
		event func(m *igbvf.Model)
	}{
		{"pf reset", func(m *igbvf.Model) { m.ResetPF(20 * time.Millisecond) }},
		{"pf down through several attempts", func(m *igbvf.Model) {
			m.PFDown()
			time.Sleep(2 * (resetTimeout + retryInterval))
			m.PFUp()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nictest.New(t, driver, nic.Config{RxRing: 64, TxRing: 64})
			echo(t, h, 8)
			before := h.Port.Stats()
			if before.RxPackets != 8 || before.TxPackets != 8 {
				t.Fatalf("before the event: %+v", before)
			}
			tt.event(vfModel(h))
			testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up },
				"no re-initialisation: %v", Rings(h).ReinitError())
			echo(t, h, 8)
			st := h.Port.Stats()
			want := nic.Stats{RxPackets: 16, RxBytes: 2 * before.RxBytes, TxPackets: 16, TxBytes: 2 * before.TxBytes, DeviceResets: 1}
			got := nic.Stats{RxPackets: st.RxPackets, RxBytes: st.RxBytes, TxPackets: st.TxPackets, TxBytes: st.TxBytes, DeviceResets: st.DeviceResets}
			if got != want {
				t.Errorf("after the event %+v, want %+v", got, want)
			}
			if st.TxErrors != 0 {
				t.Errorf("TxErrors %d: frames sent before the reset counted as errors", st.TxErrors)
			}
		})
	}
}

// TestCountersDelta checks the reading of the VF's 32-bit registers: a wrap, a PF event
// that cleared them, and a drop too large to be a wrap in the time since the last read.
func TestCountersDelta(t *testing.T) {
	tests := []struct {
		name    string
		last, v uint32
		elapsed float64
		cleared bool
		want    uint64
	}{
		{"counts on", 100, 150, 2, false, 50},
		{"wraps", 0xFFFF_FF00, 0x100, 2, false, 0x200},
		{"wraps, bytes at 1 Gb/s for 2 s", 4_200_000_000, 4_200_000_000 + 250_000_000 - 1<<32, 2, false, 250_000_000},
		{"cleared by a PF event being handled", 544, 68, 2, true, 68},
		{"cleared: more than a wrap could have counted", 544, 68, 2, false, 68},
		{"a wrap after a long gap", 544, 68, 60, false, 1<<32 - 544 + 68},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := counters{cleared: tt.cleared}
			c.last[1] = tt.last // VFGORC
			if got := c.delta(1, tt.v, tt.elapsed); got != tt.want {
				t.Errorf("delta %d, want %d", got, tt.want)
			}
		})
	}
}

// TestCountersReadPeriodically checks that the port reads its statistics registers
// without being asked (before: never, so the byte counters wrapped unseen every 34 s at
// 1 Gb/s): the watcher reads them at every tick.
func TestCountersReadPeriodically(t *testing.T) {
	saved := watchInterval
	watchInterval = 20 * time.Millisecond
	t.Cleanup(func() { watchInterval = saved })
	var reads atomic.Int64
	drv := driver
	drv.Open = func(dev pci.Device, cfg nic.Config) (nictest.Port, error) {
		dev = nictest.Hooked(dev, nictest.Hooks{Read: func(bar int, off, v uint32) uint32 {
			if off == i82576.VFGORC {
				reads.Add(1)
			}
			return v
		}})
		return driver.Open(dev, cfg)
	}
	h := nictest.New(t, drv, nic.Config{})
	opened := reads.Load()
	testutil.Eventually(t, 5*time.Second, func() bool { return reads.Load() >= opened+2 },
		"VFGORC read %d times since open, without Stats", reads.Load()-opened)
	h.Port.Stats()
}
