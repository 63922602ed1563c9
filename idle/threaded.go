package idle

import (
	"sync"
	"time"

	"github.com/uiod/uiod/irq"
)

// threaded is Threaded delivery: a helper goroutine blocks in epoll (handing its P away)
// and passes every interrupt to the polling thread over a channel, which the polling
// thread waits on instead of the Poller. It adds a thread hop to every wake-up; it exists
// for debugging and comparison.
type threaded struct {
	p        *irq.Poller
	c        *counters
	tokens   chan struct{} // one pending hand-off at most
	quit     chan struct{} // closed by stop
	done     chan struct{} // closed when the helper returned
	timer    *time.Timer
	stopOnce sync.Once
}

// startThreaded starts the helper on p, whose wait mode must be irq.WaitBlocking.
func startThreaded(p *irq.Poller, c *counters) *threaded {
	t := &threaded{
		p:      p,
		c:      c,
		tokens: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		timer:  time.NewTimer(time.Hour),
	}
	t.timer.Stop()
	go t.deliver()
	return t
}

// deliver is the helper's loop: wait, drain, hand off, until the Poller is stopped.
func (t *threaded) deliver() {
	defer close(t.done)
	for {
		w, err := t.p.Wait(-1)
		if err != nil {
			t.c.errors.Add(1)
			return
		}
		if w == irq.WakeStop {
			return
		}
		if _, err := t.p.Drain(); err != nil {
			t.c.errors.Add(1)
		}
		select {
		case t.tokens <- struct{}{}:
		default: // one pending hand-off is enough
		}
	}
}

// discard drops a hand-off from before the queues were armed (the helper has drained
// the vectors already).
func (t *threaded) discard() {
	select {
	case <-t.tokens:
	default:
	}
}

// wait blocks the polling thread until a hand-off, bound or stop.
func (t *threaded) wait(bound time.Duration) irq.Wake {
	t.timer.Reset(bound)
	var w irq.Wake
	select {
	case <-t.tokens:
		w = irq.WakeInterrupt
	case <-t.timer.C:
		w = irq.WakeTimeout
	case <-t.quit:
		w = irq.WakeStop
	}
	t.timer.Stop()
	return w
}

// stop makes every later wait return WakeStop. The helper itself ends with the Poller's
// Stop.
func (t *threaded) stop() { t.stopOnce.Do(func() { close(t.quit) }) }

// join waits for the helper to return, after the Poller was stopped.
func (t *threaded) join() { <-t.done }
