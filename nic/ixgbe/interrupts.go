package ixgbe

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// itrValue converts an interrupt interval to EITR (2.048 µs units in bits 11:3; 0 means
// no moderation). CNT_WDIS keeps the write from resetting the running counter.
func itrValue(d time.Duration) uint32 {
	units := uint32(d.Nanoseconds() / eitrUnit)
	if d > 0 && units == 0 {
		units = 1
	}
	if units > eitrIntervalMask>>eitrIntervalShift {
		units = eitrIntervalMask >> eitrIntervalShift
	}
	return units<<eitrIntervalShift | eitrCntWDis
}

// setIVAR maps a queue's cause (RX or TX) to an interrupt vector (MSI-X) or EICR bit
// (legacy): byte 2·(q&1)+tx of IVAR(q>>1).
func (p *Port) setIVAR(q int, tx bool, vector int) {
	shift := uint(16 * (q & 1))
	if tx {
		shift += 8
	}
	off := regIVAR(q >> 1)
	v := p.bar.Read32(off)
	v = v&^(0xff<<shift) | uint32(vector|ivarValid)<<shift
	p.bar.Write32(off, v)
}

// setupInterrupts programs the interrupt mode. MSI-X: vector q for RX queue q, vector
// NumRxQueues for link changes, queue causes auto-cleared (EIAC) and not auto-masked.
// INTx: one vector, RX queue q sets EICR bit q, reading EICR acknowledges. Every cause
// stays masked except link change; EnableRxInterrupt unmasks a queue's.
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
			kind = irq.INTx // e.g. uio_pci_generic: legacy interrupts only
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
	var queueBits uint32
	for q := range p.rx {
		p.setIVAR(q, false, q)
		queueBits |= 1 << q
	}
	if kind == irq.MSIX {
		r.Write32(regGPIE, r.Read32(regGPIE)&^gpieEIAME|gpieMSIXMode|gpiePBASupport)
		r.Write32(regIVARMisc, uint32(n|ivarValid)<<ivarMiscOtherShift)
		r.Write32(regEIAC, queueBits)
		for q := range p.rx {
			r.Write32(regEITR(q), itr)
			p.rxVec[q] = p.vecs[q]
		}
		// Without a watcher the link state is still read on demand by Link.
		p.lsc, _ = nic.WatchVector(p.vecs[n], p.otherInterrupt)
	} else {
		r.Write32(regGPIE, r.Read32(regGPIE)&^(gpieMSIXMode|gpieEIAME))
		r.Write32(regEIAC, 0)
		r.Write32(regEITR(0), itr)
		for q := range p.rx {
			p.rxVec[q] = p.vecs[0]
		}
	}
	r.Read32(regEICR) // drop causes left from init
	r.Write32(regEIMS, eicrLSC)
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

// EnableRxInterrupt implements nic.Port. In INTx mode it first acknowledges the shared
// cause register (handling a link change it finds there) and re-arms the vector.
func (p *Port) EnableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	if p.kind == irq.INTx {
		if eicr := p.bar.Read32(regEICR); eicr&eicrLSC != 0 {
			p.linkChanged()
		}
		p.bar.Write32(regEIMS, 1<<q)
		p.rxVec[q].Rearm()
		return
	}
	p.bar.Write32(regEIMS, 1<<q)
}

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) {
	if p.rxVec == nil {
		return
	}
	p.bar.Write32(regEIMC, 1<<q)
}

// otherInterrupt handles the MSI-X "other" vector: acknowledge the link status change
// (EICR is write-1-to-clear; reading it would also clear queue causes still masked).
func (p *Port) otherInterrupt() {
	p.bar.Write32(regEICR, eicrLSC)
	p.linkChanged()
}
