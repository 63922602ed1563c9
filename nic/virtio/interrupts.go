package virtio

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/vectors"
	"github.com/uiod/uiod/pci"
)

// enableVectors sets up the interrupt vectors: MSI-X one per RX queue plus one for
// configuration changes, INTx one vector for everything (see vectors.Enable). A device
// with too few MSI-X vectors for that gets two, as the spec allows and Linux's
// vp_find_vqs falls back to: one that every RX queue shares and one for configuration
// changes; with the default mode and not even two, INTx.
func (p *Port) enableVectors(pairs int) error {
	if p.cfg.Interrupts == nic.IRQNone {
		return nil
	}
	s, err := vectors.Enable(p.dev, p.cfg.Interrupts, pairs)
	if err == nil {
		p.irqs, p.cfgVec = s, s.Other()
		return nil
	}
	if p.cfg.Interrupts == nic.IRQINTx || errors.Is(err, pci.ErrNotSupported) || pairs == 1 {
		return err
	}
	vecs, err2 := p.dev.IRQs(irq.MSIX, 2)
	if err2 != nil {
		if p.cfg.Interrupts != nic.IRQDefault {
			return fmt.Errorf("%w; shared: %w", err, err2)
		}
		s, err = vectors.Enable(p.dev, nic.IRQINTx, pairs)
		p.irqs = s
		return err
	}
	p.irqs = vectors.Set{Kind: irq.MSIX, All: vecs, Rx: make([]*irq.Vector, pairs)}
	for q := range p.irqs.Rx {
		p.irqs.Rx[q] = vecs[0]
	}
	p.cfgVec = vecs[1]
	return nil
}

// msix reports whether the port uses MSI-X.
func (p *Port) msix() bool { return len(p.irqs.All) > 0 && p.irqs.Kind == irq.MSIX }

// rxVector is RX queue q's MSI-X vector number (NoVector without MSI-X).
func (p *Port) rxVector(q int) uint16 {
	if !p.msix() {
		return virtiospec.NoVector
	}
	return uint16(p.irqs.Rx[q].Index)
}

// configVector is the MSI-X vector of configuration changes, nil without MSI-X.
func (p *Port) configVector() *irq.Vector { return p.cfgVec }

// setConfigVector assigns the configuration-change vector.
func (p *Port) setConfigVector() error {
	v := uint16(p.cfgVec.Index)
	p.t.common.w16(virtiospec.ComMSIXConfig, v)
	if got := p.t.common.r16(virtiospec.ComMSIXConfig); got != v {
		return fmt.Errorf("config-change MSI-X vector %d refused (reads 0x%x)", v, got)
	}
	return nil
}

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
	}
	if !p.stopped {
		p.rx[q].arm()
	}
	if p.irqs.Kind == irq.INTx {
		p.irqs.Rx[q].Rearm()
	}
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.irqs.Rx == nil {
		return
	}
	if !p.stopped {
		p.rx[q].disarm()
	}
}

// ackISR reads (and so clears) the ISR status, handling a configuration change it
// reports (without waiting for a Close that holds the port).
func (p *Port) ackISR() {
	p.isrMu.Lock()
	isr := p.t.isr.r8(0)
	p.isrMu.Unlock()
	if isr&virtiospec.ISRConfig != 0 {
		p.configChanged(false)
	}
}
