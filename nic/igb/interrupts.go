package igb

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// itrValue converts an interrupt interval to EITR (1 µs units in bits 14:2; 0 means no
// moderation). CNT_IGNR keeps the write from resetting the running counter.
func itrValue(d time.Duration) uint32 {
	units := uint32(d / time.Microsecond)
	if d > 0 && units == 0 {
		units = 1
	}
	if units > eitrIntervalMask>>eitrIntervalShift {
		units = eitrIntervalMask >> eitrIntervalShift
	}
	return units<<eitrIntervalShift | eitrCntIgnr
}

// setIVAR maps queue q's RX (or TX) cause to an MSI-X vector.
func (p *Port) setIVAR(q int, tx bool, vector int) {
	off, shift := p.fam.ivarEntry(q, tx)
	v := p.bar.Read32(off)
	p.bar.Write32(off, v&^(0xff<<shift)|uint32(vector|ivarValid)<<shift)
}

// setupInterrupts programs the interrupt mode.
//
// MSI-X: vector q for RX queue q and vector NumRxQueues for the "other" causes (link
// change, through IVAR_MISC); queue causes auto-cleared by EIAC, never auto-masked (QEMU's
// igb does not emulate EIAM, and it sends a message only for a newly raised EICR∧EIMS
// bit, so every cause must be cleared once served).
//
// INTx: the receive descriptor write-back cause ICR.RXDW (shared by all queues) and link
// change in IMS; reading ICR acknowledges.
func (p *Port) setupInterrupts() error {
	if p.cfg.NoIRQ {
		return nil
	}
	n := len(p.rx)
	r := p.bar
	kind := p.cfg.Interrupts
	if kind == irq.MSIX {
		vecs, err := p.dev.IRQs(irq.MSIX, n+1)
		if err != nil {
			kind = irq.INTx
		} else {
			p.vecs = vecs
		}
	}
	if kind == irq.INTx {
		vecs, err := p.dev.IRQs(irq.INTx, 1)
		if err != nil {
			return fmt.Errorf("enable intx: %w", err)
		}
		p.vecs = vecs
	}
	p.kind = kind
	p.rxVec = make([]*irq.Vector, n)
	itr := itrValue(p.cfg.ITR)
	if kind == irq.MSIX {
		var queueBits uint32
		r.Write32(regGPIE, gpieMSIXMode|gpiePBASupport|gpieNSICR)
		for q := range p.rx {
			p.setIVAR(q, false, q)
			r.Write32(regEITR(q), itr)
			p.rxVec[q] = p.vecs[q]
			queueBits |= 1 << q
		}
		p.other = n
		r.Write32(regIVARMisc, uint32(n|ivarValid)<<8)
		r.Write32(regEIAC, queueBits)
		p.lsc, _ = nic.WatchVector(p.vecs[n], p.otherInterrupt)
		r.Write32(regICR, r.Read32(regICR))
		r.Write32(regEICR, allInterrupts)
		r.Write32(regIMS, icrLSC)
		r.Write32(regEIMS, 1<<n)
		return nil
	}
	r.Write32(regGPIE, gpieNSICR)
	r.Write32(regEITR(0), itr)
	for q := range p.rx {
		p.rxVec[q] = p.vecs[0]
	}
	r.Write32(regICR, r.Read32(regICR))
	r.Write32(regIMS, icrLSC)
	return nil
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

// EnableRxInterrupt implements nic.Port. In INTx mode all queues share ICR.RXDW: it
// acknowledges ICR (handling a link change found there), unmasks RXDW and re-arms the
// vector.
func (p *Port) EnableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		// Reading ICR clears it (GPIE.NSICR); writing the bits back clears them again,
		// which also lowers the line on models that only lower it on a write (QEMU).
		icr := p.bar.Read32(regICR)
		if icr != 0 {
			p.bar.Write32(regICR, icr)
		}
		if icr&icrLSC != 0 {
			p.linkChanged()
		}
		p.bar.Write32(regIMS, icrRXDW)
		p.rxVec[q].Rearm()
		return
	}
	p.bar.Write32(regEIMS, 1<<q)
}

// DisableRxInterrupt implements nic.Port. In INTx mode it masks RXDW for all queues.
func (p *Port) DisableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		p.bar.Write32(regIMC, icrRXDW)
		return
	}
	p.bar.Write32(regEIMC, 1<<q)
}

// otherInterrupt serves the MSI-X "other" vector: acknowledge ICR and the vector's EICR
// bit (write 1 to clear), so the next link change raises a new message.
func (p *Port) otherInterrupt() {
	icr := p.bar.Read32(regICR)
	p.bar.Write32(regICR, icr)
	p.bar.Write32(regEICR, 1<<p.other)
	if icr&icrLSC != 0 {
		p.linkChanged()
	}
}
