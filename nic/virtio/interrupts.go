package virtio

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
)

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.kind, len(p.vecs) > 0 }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector {
	if p.rxVec == nil {
		return nil
	}
	return p.rxVec[q]
}

// EnableRxInterrupt implements nic.Port: it asks the device to interrupt on RX queue q's
// next used entry (used_event, or clearing NO_INTERRUPT). In INTx mode it first reads the
// ISR register, which acknowledges the line (and counts a configuration change it reports),
// and re-arms the vector last. The caller polls the queue once more afterwards: a frame the
// device completed before it saw the request raises no interrupt.
func (p *Port) EnableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		p.ackISR()
		p.rx[q].arm()
		p.rxVec[q].Rearm()
		return
	}
	p.rx[q].arm()
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	p.rx[q].disarm()
}

// ackISR reads (and so clears) the ISR status, counting a configuration change.
func (p *Port) ackISR() {
	p.isrMu.Lock()
	isr := p.t.isr.r8(0)
	p.isrMu.Unlock()
	if isr&virtiospec.ISRConfig != 0 {
		p.linkCh.Add(1)
	}
}

// configWatcher calls a function on its own goroutine each time the configuration-change
// vector fires.
type configWatcher struct {
	poller *irq.Poller
	done   chan struct{}
}

func watchConfig(v *irq.Vector, fn func()) (*configWatcher, error) {
	pl, err := irq.NewPoller(irq.WaitBlocking, v)
	if err != nil {
		return nil, fmt.Errorf("watch config vector: %w", err)
	}
	w := &configWatcher{poller: pl, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			wake, err := pl.Wait(-1)
			if err != nil || wake == irq.WakeStop {
				return
			}
			if n, err := v.Drain(); err != nil {
				return
			} else if n > 0 {
				fn()
			}
		}
	}()
	return w, nil
}

// stop ends the goroutine and waits for it.
func (w *configWatcher) stop() {
	w.poller.Stop()
	<-w.done
	w.poller.Close()
}
