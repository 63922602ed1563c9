package dataplane

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// countingPort counts the RxBursts into a fake port.
type countingPort struct {
	*fakePort
	polls atomic.Int64
}

func (p *countingPort) RxBurst(q int, bufs []*nic.Buf) int {
	p.polls.Add(1)
	return p.fakePort.RxBurst(q, bufs)
}

// TestExclusive: while Exclusive's function runs no thread polls, whether it was busy
// polling or asleep under adaptive with the longest wait_timeout (it is woken); afterwards
// polling goes on. Before Start the function runs at once.
func TestExclusive(t *testing.T) {
	for _, pol := range busyAndSleeping {
		t.Run(pol.Mode.String(), func(t *testing.T) {
			dma := &goDMA{}
			a := &countingPort{fakePort: newFakePort(t, dma, 1, 1, true)}
			b := &countingPort{fakePort: newFakePort(t, dma, 1, 1, true)}
			dp := newCrossed(t, pol, a, b)
			ran := false
			if err := dp.Exclusive(func() { ran = true }); err != nil || !ran {
				t.Fatalf("before Start: %v, ran %v", err, ran)
			}
			if err := dp.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "polls", func() bool { return a.polls.Load() > 0 && b.polls.Load() > 0 })
			var during [2]int64
			err := dp.Exclusive(func() {
				pa, pb := a.polls.Load(), b.polls.Load()
				time.Sleep(30 * time.Millisecond)
				during = [2]int64{a.polls.Load() - pa, b.polls.Load() - pb}
			})
			if err != nil {
				t.Fatal(err)
			}
			if during != [2]int64{} {
				t.Errorf("polls while Exclusive ran: %v", during)
			}
			pa := a.polls.Load()
			if pol.Mode == idle.Busy {
				waitFor(t, "polls after Exclusive", func() bool { return a.polls.Load() > pa })
			}
		})
	}
}
