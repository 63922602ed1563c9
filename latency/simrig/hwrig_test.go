package simrig

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/latency"
)

// TestDeviceClockKnownDelay measures a cable that holds every probe a known time, on
// both Intel kinds, on device clocks: every device-clock sample is at least that delay
// (less the clock error the run reports), and no software sample is below the smallest
// device-clock one (the software figure spans the device-clock path and more).
func TestDeviceClockKnownDelay(t *testing.T) {
	const delay = 300 * time.Microsecond
	for _, name := range []string{NICIgb, NICIxgbe} {
		t.Run(name, func(t *testing.T) {
			cfg := latency.Config{Count: 100, Size: latency.MinPTPFrameSize, Pattern: latency.Constant{Gap: time.Millisecond}}
			rows, err := Run(context.Background(), []Policy{{"busy", idle.PolicyConfig{Mode: idle.Busy}}}, cfg,
				Options{NIC: name, HWStamps: true, Delay: delay})
			if err != nil {
				t.Fatal(err)
			}
			r := rows[0].Result
			hw, c := r.DeviceClock, r.Clock
			if hw == nil || c == nil {
				t.Fatal("no device-clock result")
			}
			if hw.Received == 0 {
				t.Fatalf("no probe with both stamps (tx lost %d, rx lost %d)", c.TxStampsLost, c.RxStampsLost)
			}
			if hw.Received+c.TxStampsLost+c.RxStampsLost > r.Sent {
				t.Errorf("%d samples and %d+%d lost stamps for %d probes", hw.Received, c.TxStampsLost, c.RxStampsLost, r.Sent)
			}
			if hw.MinNs < int64(delay)-c.ErrorNs {
				t.Errorf("device-clock minimum %d ns is below the cable's %v delay (clock error ±%d ns)", hw.MinNs, delay, c.ErrorNs)
			}
			// Each probe's software interval contains its device-clock one, so the minima
			// compare only when both cover the same probes: a probe whose stamp was lost
			// (the one-latch rule, under load) may be the software minimum.
			if r.Received > 0 && hw.Received == r.Received && r.MinNs < hw.MinNs-c.ErrorNs {
				t.Errorf("software minimum %d ns below the device-clock minimum %d ns", r.MinNs, hw.MinNs)
			}
			t.Logf("%s: device clock p50 %d ns over %d samples, software p50 %d ns; clock offset %d ± %d ns, rx stamps lost %d",
				name, hw.Summary().Median, hw.Received, r.Summary().Median, c.OffsetNs, c.ErrorNs, c.RxStampsLost)
		})
	}
}

// TestDeviceClockFallsBack asks for device clocks on virtio-net ports, which have none:
// the run says so and measures software timestamps only, labelled as such.
func TestDeviceClockFallsBack(t *testing.T) {
	var progress bytes.Buffer
	cfg := latency.Config{Count: 20, Size: latency.MinPTPFrameSize, Pattern: latency.Constant{Gap: time.Millisecond}}
	rows, err := Run(context.Background(), []Policy{{"busy", idle.PolicyConfig{Mode: idle.Busy}}}, cfg,
		Options{NIC: NICVirtio, HWStamps: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Result.DeviceClock != nil || rows[0].Result.Clock != nil {
		t.Error("a device-clock result from ports that cannot timestamp")
	}
	if !strings.Contains(progress.String(), "cannot timestamp") || !strings.Contains(progress.String(), "software timestamps only") {
		t.Errorf("progress does not say why there is no device clock:\n%s", progress.String())
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "dev") {
		t.Errorf("table has device-clock columns without a device clock:\n%s", table.String())
	}
}
