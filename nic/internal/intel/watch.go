package intel

import (
	"fmt"
	"sync"

	"github.com/uiod/uiod/irq"
)

// vectorWatcher calls a function on its own goroutine each time an interrupt vector
// fires. The drivers use it for the MSI-X "other" vector (link status changes), which is
// off the data path. It waits with an irq.Poller in blocking mode, so the goroutine holds
// no P while the link is quiet.
type vectorWatcher struct {
	p    *irq.Poller
	done chan struct{}
	once sync.Once
}

// watchVector starts a goroutine that drains v and calls fn whenever v fires, until stop.
func watchVector(v *irq.Vector, fn func()) (*vectorWatcher, error) {
	p, err := irq.NewPoller(irq.WaitBlocking, v)
	if err != nil {
		return nil, fmt.Errorf("watch vector: %w", err)
	}
	w := &vectorWatcher{p: p, done: make(chan struct{})}
	go w.run(fn)
	return w, nil
}

func (w *vectorWatcher) run(fn func()) {
	defer close(w.done)
	for {
		wake, err := w.p.Wait(-1)
		if err != nil || wake == irq.WakeStop {
			return
		}
		if wake != irq.WakeInterrupt {
			continue
		}
		n, err := w.p.Drain()
		if err != nil {
			return
		}
		if n > 0 {
			fn()
		}
	}
}

// stop ends the goroutine, waits for it and closes the poller. Call it before the vector
// is closed. Safe to call more than once.
func (w *vectorWatcher) stop() {
	w.once.Do(func() {
		w.p.Stop()
		<-w.done
		w.p.Close()
	})
}
