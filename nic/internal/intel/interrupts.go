package intel

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// EnableVectors enables the port's interrupt vectors in the configured mode. MSI-X: vector
// q for RX queue q and vector NumRxQueues for the "other" causes. INTx: one vector that
// every RX queue shares. The default mode asks for MSI-X and takes INTx only when the
// backend reports MSI-X as not supported (pci.ErrNotSupported, uio_pci_generic); any
// other failure is an error. It returns the mode in use, and ok false when the
// configuration asks for no interrupts.
func EnableVectors(p *Port) (kind irq.Kind, ok bool, err error) {
	if p.cfg.NoIRQ {
		return 0, false, nil
	}
	n := len(p.rx)
	mode := p.cfg.Interrupts
	if mode == nic.IRQDefault || mode == nic.IRQMSIX {
		vecs, err := p.dev.IRQs(irq.MSIX, n+1)
		switch {
		case err == nil:
			kind, p.vecs = irq.MSIX, vecs
		case mode == nic.IRQDefault && errors.Is(err, pci.ErrNotSupported):
			mode = nic.IRQINTx
		default:
			return irq.MSIX, false, fmt.Errorf("enable msi-x: %w", err)
		}
	}
	if mode == nic.IRQINTx {
		vecs, err := p.dev.IRQs(irq.INTx, 1)
		if err != nil {
			return irq.INTx, false, fmt.Errorf("enable intx: %w", err)
		}
		kind, p.vecs = irq.INTx, vecs
	}
	p.kind = kind
	p.rxVec = make([]*irq.Vector, n)
	for q := range p.rxVec {
		if kind == irq.MSIX {
			p.rxVec[q] = p.vecs[q]
		} else {
			p.rxVec[q] = p.vecs[0]
		}
	}
	return kind, true, nil
}

// WatchOther calls fn on its own goroutine each time the MSI-X "other" vector (the one
// after the RX queues') fires. Without a watcher the link state is still read on demand
// by Link, so a failure to start one is not an error.
func WatchOther(p *Port, fn func()) {
	p.lsc, _ = watchVector(p.vecs[len(p.rx)], fn)
}

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.kind, len(p.vecs) > 0 }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector {
	if p.rxVec == nil {
		return nil
	}
	return p.rxVec[q]
}

// EnableRxInterrupt implements nic.Port. In INTx mode the driver acknowledges the shared
// cause register (handling a link change it finds there) and unmasks the queue's cause,
// then the vector is re-armed.
func (p *Port) EnableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		p.ops.UnmaskINTx(q)
		p.rxVec[q].Rearm()
		return
	}
	p.bar.Write32(p.layout.EIMS, 1<<q)
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		p.ops.MaskINTx(q)
		return
	}
	p.bar.Write32(p.layout.EIMC, 1<<q)
}

// Interval converts an interrupt interval to an EITR interval field: whole units of unit
// (at least one for a positive d, at most what mask holds) shifted into place. 0 means no
// moderation; d must not be negative (nic.Config.Validate refuses it).
func Interval(d, unit time.Duration, mask uint32, shift uint) uint32 {
	units := d / unit // clamped before it is narrowed: a long d must not wrap around
	if d > 0 && units == 0 {
		units = 1
	}
	if limit := time.Duration(mask >> shift); units > limit {
		units = limit
	}
	return uint32(units) << shift
}

// ivarValid marks an IVAR allocation entry valid.
const ivarValid = 0x80

// SetIVAR points the 8-bit IVAR allocation entry at bit shift of register off to vector
// and marks it valid.
func SetIVAR(r pci.Region, off uint32, shift uint, vector int) {
	v := r.Read32(off)
	r.Write32(off, v&^(0xff<<shift)|uint32(vector|ivarValid)<<shift)
}
