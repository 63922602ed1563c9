package ixgbe

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic/internal/intel"
)

// setupInterrupts programs the interrupt mode of the vectors intel.EnableVectors enabled. MSI-X: GPIE in MSI-X mode with the other
// causes cleared only by writing EICR (OCD), then vector q for RX queue q and vector
// NumRxQueues for link changes, queue causes auto-cleared (EIAC) and not auto-masked.
// GPIE goes before the IVAR entries, as in Linux (ixgbe_up_complete: ixgbe_setup_gpie,
// then ixgbe_configure_msix). INTx: one vector, RX queue q sets EICR bit q, reading EICR
// acknowledges. Every cause stays masked except link change; EnableRxInterrupt unmasks a
// queue's.
func (p *Port) setupInterrupts(kind irq.Kind) {
	r := p.bar()
	gpie := r.Read32(i82599.GPIE) &^ (intelnic.GpieMSIXMode | intelnic.GpieEIAME | i82599.GpieOCD)
	if kind == irq.MSIX {
		gpie |= intelnic.GpieMSIXMode | intelnic.GpiePBASupport | i82599.GpieOCD
	}
	r.Write32(i82599.GPIE, gpie)
	queueBits := intel.MapRxQueues(&p.core)
	if kind == irq.MSIX {
		n := p.NumRxQueues()
		r.Write32(i82599.IVARMisc, uint32(n|intelnic.IvarValid)<<i82599.IvarMiscOtherShift)
		r.Write32(i82599.EIAC, queueBits)
		intel.Moderate(&p.core, n)
		intel.WatchOther(&p.core, p.otherInterrupt)
	} else {
		r.Write32(i82599.EIAC, 0)
		intel.Moderate(&p.core, 1)
	}
	// Drop causes left from init. In MSI-X mode GPIE.OCD keeps a read from clearing the
	// other causes, so they are written off.
	r.Write32(i82599.EICR, intelnic.AllCauses)
	r.Write32(i82599.EIMS, i82599.EicrLSC)
}

// unmaskINTx acknowledges the shared cause register, handling a link change it finds
// there, and unmasks RX queue q's cause (EICR bit q).
func (p *Port) unmaskINTx(q int) {
	if eicr := p.bar().Read32(i82599.EICR); eicr&i82599.EicrLSC != 0 {
		intel.LinkChanged(&p.core)
	}
	p.bar().Write32(i82599.EIMS, 1<<q)
}

// maskINTx masks RX queue q's cause (EICR bit q).
func (p *Port) maskINTx(q int) { p.bar().Write32(i82599.EIMC, 1<<q) }

// otherInterrupt handles the MSI-X "other" vector: acknowledge the link status change
// (EICR is write-1-to-clear; reading it would also clear queue causes still masked).
func (p *Port) otherInterrupt() {
	p.bar().Write32(i82599.EICR, i82599.EicrLSC)
	intel.LinkChanged(&p.core)
}
