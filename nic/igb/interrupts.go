package igb

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic/internal/intel"
)

// setupInterrupts programs the interrupt mode of the vectors intel.EnableVectors enabled.
//
// MSI-X: vector q for RX queue q and vector NumRxQueues for the "other" causes (link
// change, through IVAR_MISC); queue causes auto-cleared by EIAC, never auto-masked (QEMU's
// igb does not emulate EIAM, and it sends a message only for a newly raised EICR∧EIMS
// bit, so every cause must be cleared once served).
//
// INTx: every RX queue's cause allocated to EICR bit 0 through IVAR, as Linux's legacy
// path does (igb_assign_vector of the one vector; on silicon a queue without a valid entry
// raises no interrupt), and the receive descriptor write-back cause ICR.RXDW (shared by
// all queues) and link change in IMS; reading ICR acknowledges.
func (p *Port) setupInterrupts(kind irq.Kind) {
	n := p.NumRxQueues()
	r := p.bar()
	if kind == irq.MSIX {
		r.Write32(i82576.GPIE, intelnic.GpieMSIXMode|intelnic.GpiePBASupport|i82576.GpieNSICR)
		queueBits := intel.MapRxQueues(&p.core)
		intel.Moderate(&p.core, n)
		p.other = n
		r.Write32(i82576.IVARMisc, uint32(n|intelnic.IvarValid)<<8)
		r.Write32(i82576.EIAC, queueBits)
		intel.WatchOther(&p.core, p.otherInterrupt)
		r.Write32(i82576.ICR, r.Read32(i82576.ICR))
		r.Write32(i82576.EICR, intelnic.AllCauses)
		r.Write32(i82576.IMS, i82576.IcrLSC)
		r.Write32(i82576.EIMS, 1<<n)
		return
	}
	r.Write32(i82576.GPIE, i82576.GpieNSICR)
	for q := 0; q < n; q++ {
		intel.SetIVAR(&p.core, q, false, 0)
	}
	intel.Moderate(&p.core, 1)
	r.Write32(i82576.ICR, r.Read32(i82576.ICR))
	r.Write32(i82576.IMS, i82576.IcrLSC)
}

// unmaskINTx acknowledges ICR, handling a link change found there, and unmasks RXDW,
// the receive cause all queues share.
func (p *Port) unmaskINTx(q int) {
	// Reading ICR clears it (GPIE.NSICR); writing the bits back clears them again,
	// which also lowers the line on models that only lower it on a write (QEMU).
	icr := p.bar().Read32(i82576.ICR)
	if icr != 0 {
		p.bar().Write32(i82576.ICR, icr)
	}
	if icr&i82576.IcrLSC != 0 {
		intel.LinkChanged(&p.core)
	}
	p.bar().Write32(i82576.IMS, i82576.IcrRXDW)
}

// maskINTx masks RXDW, and with it the receive interrupt of every queue.
func (p *Port) maskINTx(q int) { p.bar().Write32(i82576.IMC, i82576.IcrRXDW) }

// otherInterrupt serves the MSI-X "other" vector: acknowledge the vector's EICR bit
// (write 1 to clear), then read ICR, which clears it (GPIE.NSICR, set in MSI-X mode, on
// hardware and in QEMU alike). The EICR bit goes first and ICR is not written back: a
// link change after the read then raises both anew and sends a new message, where
// clearing either afterwards would swallow that change.
func (p *Port) otherInterrupt() {
	p.bar().Write32(i82576.EICR, 1<<p.other)
	icr := p.bar().Read32(i82576.ICR)
	if icr&i82576.IcrLSC != 0 {
		intel.LinkChanged(&p.core)
	}
}
