package ixgbe

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic/internal/intel"
)

// itrValue converts an interrupt interval to EITR (2.048 µs units in bits 11:3; 0 means
// no moderation). CNT_WDIS keeps the write from resetting the running counter.
func itrValue(d time.Duration) uint32 {
	return intel.Interval(d, ITRUnit, i82599.EitrIntervalMask, i82599.EitrIntervalShift) | i82599.EitrCntWDis
}

// setIVAR maps a queue's cause (RX or TX) to an interrupt vector (MSI-X) or EICR bit
// (legacy): byte 2·(q&1)+tx of IVAR(q>>1).
func (p *Port) setIVAR(q int, tx bool, vector int) {
	off, shift := i82599.IVAREntry(q, tx)
	intel.SetIVAR(p.bar, off, shift, vector)
}

// setupInterrupts programs the interrupt mode. MSI-X: GPIE in MSI-X mode with the other
// causes cleared only by writing EICR (OCD), then vector q for RX queue q and vector
// NumRxQueues for link changes, queue causes auto-cleared (EIAC) and not auto-masked.
// GPIE goes before the IVAR entries, as in Linux (ixgbe_up_complete: ixgbe_setup_gpie,
// then ixgbe_configure_msix). INTx: one vector, RX queue q sets EICR bit q, reading EICR
// acknowledges. Every cause stays masked except link change; EnableRxInterrupt unmasks a
// queue's.
func (p *Port) setupInterrupts() error {
	kind, ok, err := intel.EnableVectors(&p.core)
	if !ok {
		return err
	}
	n := p.NumRxQueues()
	r := p.bar
	itr := itrValue(p.cfg.ITR)
	if kind == irq.MSIX {
		r.Write32(i82599.GPIE, r.Read32(i82599.GPIE)&^intelnic.GpieEIAME|intelnic.GpieMSIXMode|intelnic.GpiePBASupport|i82599.GpieOCD)
	} else {
		r.Write32(i82599.GPIE, r.Read32(i82599.GPIE)&^(intelnic.GpieMSIXMode|intelnic.GpieEIAME|i82599.GpieOCD))
	}
	var queueBits uint32
	for q := 0; q < n; q++ {
		p.setIVAR(q, false, q)
		queueBits |= 1 << q
	}
	if kind == irq.MSIX {
		r.Write32(i82599.IVARMisc, uint32(n|intelnic.IvarValid)<<i82599.IvarMiscOtherShift)
		r.Write32(i82599.EIAC, queueBits)
		for q := 0; q < n; q++ {
			r.Write32(i82599.EITR(q), itr)
		}
		intel.WatchOther(&p.core, p.otherInterrupt)
	} else {
		r.Write32(i82599.EIAC, 0)
		r.Write32(i82599.EITR(0), itr)
	}
	// Drop causes left from init. In MSI-X mode GPIE.OCD keeps a read from clearing the
	// other causes, so they are written off.
	r.Write32(i82599.EICR, intelnic.AllCauses)
	r.Write32(i82599.EIMS, i82599.EicrLSC)
	return nil
}

// unmaskINTx acknowledges the shared cause register, handling a link change it finds
// there, and unmasks RX queue q's cause (EICR bit q).
func (p *Port) unmaskINTx(q int) {
	if eicr := p.bar.Read32(i82599.EICR); eicr&i82599.EicrLSC != 0 {
		intel.LinkChanged(&p.core)
	}
	p.bar.Write32(i82599.EIMS, 1<<q)
}

// maskINTx masks RX queue q's cause (EICR bit q).
func (p *Port) maskINTx(q int) { p.bar.Write32(i82599.EIMC, 1<<q) }

// otherInterrupt handles the MSI-X "other" vector: acknowledge the link status change
// (EICR is write-1-to-clear; reading it would also clear queue causes still masked).
func (p *Port) otherInterrupt() {
	p.bar.Write32(i82599.EICR, i82599.EicrLSC)
	intel.LinkChanged(&p.core)
}
