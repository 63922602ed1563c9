package integration

import (
	"encoding/json"
	"fmt"
)

// daemonStatus is the part of the daemon's /status the guest tests read.
type daemonStatus struct {
	Ports []struct {
		Name   string `json:"name"`
		LinkUp bool   `json:"link_up"`
		Stats  struct {
			RxPackets uint64 `json:"rx_packets"`
			TxPackets uint64 `json:"tx_packets"`
			RxMissed  uint64 `json:"rx_missed"`
		} `json:"stats"`
	} `json:"ports"`
	Queues []struct {
		Name      string `json:"name"`
		Thread    int    `json:"thread"`
		RxPackets uint64 `json:"rx_packets"`
		TxPackets uint64 `json:"tx_packets"`
		Drops     uint64 `json:"drops"`
	} `json:"queues"`
	Threads []statusThread `json:"threads"`
}

// statusThread is one poll thread's counters in /status.
type statusThread struct {
	Index         int     `json:"index"`
	CPU           int     `json:"cpu"`
	Arms          uint64  `json:"arms"`
	Sleeps        uint64  `json:"sleeps"`
	WakeInterrupt uint64  `json:"wakeups_interrupt"`
	WakeTimeout   uint64  `json:"wakeups_timeout"`
	WakeSpurious  uint64  `json:"wakeups_spurious"`
	AsleepSeconds float64 `json:"asleep_seconds"`
}

// wakeCountsOf returns a poll thread's sleeps and wake-ups from before to after.
func wakeCountsOf(before, after statusThread) wakeCounts {
	return wakeCounts{
		sleeps:   after.Sleeps - before.Sleeps,
		woken:    after.WakeInterrupt - before.WakeInterrupt,
		spurious: after.WakeSpurious - before.WakeSpurious,
	}
}

// parseStatus decodes a snapshot's /status and checks it has the ports and the poll
// threads of the configuration.
func parseStatus(s *snapshot, ports, threads int) (*daemonStatus, error) {
	var st daemonStatus
	if err := json.Unmarshal(s.status, &st); err != nil {
		return nil, fmt.Errorf("daemon /status: %w:\n%s", err, s.status)
	}
	if len(st.Ports) != ports || len(st.Threads) != threads {
		return nil, fmt.Errorf("daemon /status has %d ports and %d poll threads, want %d and %d:\n%s",
			len(st.Ports), len(st.Threads), ports, threads, s.status)
	}
	return &st, nil
}

// queue returns the index in Queues of port p's RX queue q ("p<p>/rx<q>"), or -1.
func (s *daemonStatus) queue(p, q int) int {
	name := fmt.Sprintf("p%d/rx%d", p, q)
	for i, x := range s.Queues {
		if x.Name == name {
			return i
		}
	}
	return -1
}
