package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLatencySimDeviceClock runs `uiod latency --sim --timestamps hw`: on igb the table
// has the device-clock columns beside the software ones and the JSON each run's
// device_clock and clock; on virtio, which cannot timestamp, stderr says so and nothing
// is labelled device clock.
func TestLatencySimDeviceClock(t *testing.T) {
	for _, tt := range []struct {
		nic string
		hw  bool
	}{{"igb", true}, {"virtio", false}} {
		t.Run(tt.nic, func(t *testing.T) {
			stdout, stderr, err := execSplit(t, "latency", "--sim", "--nic", tt.nic, "--timestamps", "hw", "--count", "100",
				"--interval", "1ms", "--policies", "busy", "--json", "-")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var rows []struct {
				Latency struct {
					DeviceClock *struct {
						Samples  uint64 `json:"samples"`
						MedianNs int64  `json:"median_ns"`
					} `json:"device_clock"`
					Clock *struct {
						ErrorNs int64 `json:"error_ns"`
					} `json:"clock"`
				} `json:"latency"`
			}
			if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
				t.Fatalf("JSON: %v\n%s", err, stdout)
			}
			l := rows[0].Latency
			if got := l.DeviceClock != nil && l.Clock != nil; got != tt.hw {
				t.Fatalf("device clock in the JSON: %v, want %v\n%s", got, tt.hw, stdout)
			}
			hasCols := strings.Contains(stderr, "dev p50(µs)")
			if hasCols != tt.hw {
				t.Errorf("device-clock columns in the table: %v, want %v\n%s", hasCols, tt.hw, stderr)
			}
			if said := strings.Contains(stderr, "cannot timestamp"); said == tt.hw {
				t.Errorf("fallback message %v, want %v\n%s", said, !tt.hw, stderr)
			}
		})
	}
}
