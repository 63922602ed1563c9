package pci

import (
	"errors"
	"fmt"
	"sync"

	"github.com/uiod/uiod/irq"
)

// EventRelay turns interrupt vectors that signal Events (VFIO's request and error
// eventfds, or a device model's) into the channel Requester.Events returns. One goroutine
// sleeps on the vectors with a blocking epoll wait (it holds no P while it waits).
type EventRelay struct {
	ch     chan Event
	poller *irq.Poller
	vecs   []relayVector
	done   chan struct{}
	once   sync.Once
}

type relayVector struct {
	ev Event
	v  *irq.Vector
}

// NewEventRelay starts relaying: when vecs[e] fires, e is sent. Nil vectors are skipped.
// The vectors stay the caller's: Close does not close them.
func NewEventRelay(vecs map[Event]*irq.Vector) (*EventRelay, error) {
	r := &EventRelay{ch: make(chan Event, 2), done: make(chan struct{})}
	var vs []*irq.Vector
	for _, e := range []Event{EventRequest, EventError} {
		if v := vecs[e]; v != nil {
			r.vecs = append(r.vecs, relayVector{e, v})
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return nil, errors.New("event relay: no vectors")
	}
	p, err := irq.NewPoller(irq.WaitBlocking, vs...)
	if err != nil {
		return nil, fmt.Errorf("event relay: %w", err)
	}
	r.poller = p
	go r.run()
	return r, nil
}

// C is the channel events arrive on; it is closed by Close.
func (r *EventRelay) C() <-chan Event { return r.ch }

func (r *EventRelay) run() {
	defer close(r.done)
	defer close(r.ch)
	for {
		w, err := r.poller.Wait(-1)
		if err != nil || w == irq.WakeStop {
			return
		}
		for _, rv := range r.vecs {
			n, err := rv.v.Drain()
			if err != nil || n == 0 {
				continue
			}
			select {
			case r.ch <- rv.ev:
			default: // one of each kind is pending already: the reader has not acted yet
			}
		}
	}
}

// Close stops the relay and closes C, waiting for the goroutine to finish. Safe to call
// more than once.
func (r *EventRelay) Close() error {
	var err error
	r.once.Do(func() {
		err = r.poller.Stop()
		<-r.done
		err = errors.Join(err, r.poller.Close())
	})
	return err
}
