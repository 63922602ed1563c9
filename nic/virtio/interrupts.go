package virtio

import (
	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
)

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.irqs.IRQKind() }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector { return p.irqs.RxVector(q) }

// EnableRxInterrupt implements nic.Port: it asks the device to interrupt on RX queue q's
// next used entry (used_event, or clearing NO_INTERRUPT). In INTx mode it first reads the
// ISR register, which acknowledges the line (and counts a configuration change it reports),
// and re-arms the vector last. The caller polls the queue once more afterwards: a frame the
// device completed before it saw the request raises no interrupt.
func (p *Port) EnableRxInterrupt(q int) {
	if p.irqs.Rx == nil {
		return
	}
	if p.irqs.Kind == irq.INTx {
		p.ackISR()
		p.rx[q].arm()
		p.irqs.Rx[q].Rearm()
		return
	}
	p.rx[q].arm()
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.irqs.Rx == nil {
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
