package dataplane

import (
	"testing"
	"time"
)

// TestQueueCountersSnapshotConsistent publishes counters that always satisfy
// RxPackets = TxPackets + Drops and Polls ≥ EmptyPolls from one goroutine while another
// takes snapshots: every snapshot must satisfy them too, not only the final one.
func TestQueueCountersSnapshotConsistent(t *testing.T) {
	var c queueCounters
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= 200000; i++ {
			c.local[cPolls]++
			if i%3 == 0 {
				c.local[cEmptyPolls]++
			} else {
				c.local[cRxPackets] += 2
				c.local[cRxBytes] += 128
				c.local[cTxPackets]++
				c.local[cDrops]++
			}
			c.publish()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; ; n++ {
		s := c.snapshot("q", 0)
		if s.RxPackets != s.TxPackets+s.Drops || s.RxBytes != 64*s.RxPackets || s.Polls < s.EmptyPolls {
			t.Fatalf("snapshot %d mixes two publishes: %+v", n, s)
		}
		select {
		case <-done:
			if s := c.snapshot("q", 0); s.Polls != 200000 || s.RxPackets != s.TxPackets+s.Drops {
				t.Fatalf("final snapshot %+v", s)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("publisher did not finish")
		}
	}
}
