package intel

import (
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/vectors"
)

// EnableVectors is the bring-up step before a driver programs its interrupt causes: it
// enables the port's interrupt vectors in the configured mode (see vectors.Enable). It returns the mode in use, and ok false when the configuration asks
// for no interrupts or the vectors could not be enabled (err says why).
func EnableVectors(p *Port) (kind irq.Kind, ok bool, err error) {
	if p.cfg.Interrupts == nic.IRQNone {
		return 0, false, nil
	}
	p.irqs, err = vectors.Enable(p.dev, p.cfg.Interrupts, len(p.rx))
	if err != nil {
		return 0, false, err
	}
	return p.irqs.Kind, true, nil
}

// WatchOther calls fn on its own goroutine each time the MSI-X "other" vector (the one
// after the RX queues') fires. Without a watcher the link state is still read on demand
// by Link, so a failure to start one is not an error.
func WatchOther(p *Port, fn func()) {
	p.lsc, _ = vectors.Watch(p.irqs.Other(), fn)
}

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.irqs.IRQKind() }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector { return p.irqs.RxVector(q) }

// EnableRxInterrupt implements nic.Port. In INTx mode the driver acknowledges the shared
// cause register (handling a link change it finds there) and unmasks the queue's cause,
// then the vector is re-armed.
func (p *Port) EnableRxInterrupt(q int) {
	if p.irqs.Rx == nil {
		return
	}
	if p.irqs.Kind == irq.INTx {
		p.ops.UnmaskINTx(q)
		p.irqs.Rx[q].Rearm()
		return
	}
	p.bar.Write32(p.layout.EIMS, 1<<q)
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.irqs.Rx == nil {
		return
	}
	if p.irqs.Kind == irq.INTx {
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

// Moderation is how a controller encodes an interrupt interval in EITR: the interval field
// (Mask, from bit Shift) counts Units, and Keep is the bit that keeps a write from resetting
// the running counter.
type Moderation struct {
	Unit  time.Duration
	Mask  uint32
	Shift uint
	Keep  uint32
}

// Value is the EITR value of interval d: its Interval field, with Keep.
func (m Moderation) Value(d time.Duration) uint32 {
	return Interval(d, m.Unit, m.Mask, m.Shift) | m.Keep
}

// Moderate writes the configured interrupt interval to the EITR of vectors 0..n-1.
func Moderate(p *Port, n int) {
	v := p.layout.ITR.Value(p.cfg.ITR)
	for i := 0; i < n; i++ {
		p.bar.Write32(p.layout.EITR(i), v)
	}
}

// SetIVAR points the 8-bit IVAR allocation entry of RX (tx false) or TX queue q at vector
// and marks it valid.
func SetIVAR(p *Port, q int, tx bool, vector int) {
	off, shift := p.layout.IVAR(q, tx)
	v := p.bar.Read32(off)
	p.bar.Write32(off, v&^(0xff<<shift)|uint32(vector|intelnic.IvarValid)<<shift)
}

// MapRxQueues points each RX queue q's cause at vector (MSI-X) or EICR bit q and returns
// the mask of those bits.
func MapRxQueues(p *Port) (bits uint32) {
	for q := range p.rx {
		SetIVAR(p, q, false, q)
		bits |= 1 << q
	}
	return bits
}
