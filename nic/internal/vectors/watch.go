package vectors

import (
	"fmt"
	"sync"

	"github.com/uiod/uiod/irq"
)

// Watcher calls a function on its own goroutine each time an interrupt vector
// fires. The drivers use it for the MSI-X "other" vector (Intel: link status changes), which is
// off the data path (virtio: configuration changes). It waits with an irq.Poller in blocking mode, so the goroutine holds
// no P while the link is quiet.
type Watcher struct {
	p    *irq.Poller
	done chan struct{}
	once sync.Once
}

// Watch starts a goroutine that drains v and calls fn whenever v fires, until Stop.
func Watch(v *irq.Vector, fn func()) (*Watcher, error) {
	p, err := irq.NewPoller(irq.WaitBlocking, v)
	if err != nil {
		return nil, fmt.Errorf("watch vector: %w", err)
	}
	w := &Watcher{p: p, done: make(chan struct{})}
	go w.run(fn)
	return w, nil
}

func (w *Watcher) run(fn func()) {
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

// Stop ends the goroutine, waits for it and closes the poller. Call it before the vector
// is closed. Safe to call more than once.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		w.p.Stop()
		<-w.done
		w.p.Close()
	})
}
