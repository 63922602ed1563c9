package ixgbe

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/nic/internal/intel"
)

// resetHW is datasheet section 4.6.3: mask interrupts, global reset, mask again, wait for
// the EEPROM auto-read and the DMA init.
func (p *Port) resetHW() error {
	r := p.bar
	r.Write32(regEIMC, eimcAll)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlResetMask)
	if err := intel.WaitClear(r, regCTRL, ctrlResetMask, time.Second); err != nil {
		return fmt.Errorf("global reset: %w", err)
	}
	time.Sleep(10 * time.Millisecond) // the datasheet asks for at least 10 ms before further access
	r.Write32(regEIMC, eimcAll)
	if err := intel.WaitSet(r, p.fam.eecOffset(), eecAutoReadDone, time.Second); err != nil {
		return fmt.Errorf("eeprom auto-read: %w", err)
	}
	if err := intel.WaitSet(r, regRDRXCTL, rdrxctlDMAIDone, time.Second); err != nil {
		return fmt.Errorf("dma init: %w", err)
	}
	return nil
}

// setupLink is datasheet section 4.6.4 for the 82599: 10G serial link mode, XAUI PMA/PMD,
// restart auto-negotiation. The X540/X550 copper PHYs negotiate on their own after reset.
func (p *Port) setupLink() {
	if p.fam != family82599 {
		return
	}
	r := p.bar
	autoc := r.Read32(regAUTOC)
	autoc = autoc&^(autocLMSMask|autocPMAPMDMask) | autocLMS10GSerial | autocPMAPMDXAUI
	r.Write32(regAUTOC, autoc)
	r.Write32(regAUTOC, autoc|autocAnRestart)
}

// initRx is datasheet section 4.6.7: receive off, CRC strip, filters, per queue SRRCTL
// and the ring, RSS, then the queues enabled and their rings filled. RXCTRL.RXEN is set by
// open once transmit is up too.
func (p *Port) initRx() error {
	r := p.bar
	r.Write32(regRXCTRL, r.Read32(regRXCTRL)&^rxctrlRXEN)
	// Accept frames up to the buffer size (FCS stripped): jumbo frames beyond 1518 bytes.
	hlreg0 := r.Read32(regHLREG0) | hlreg0RxCRCStrp
	mfs := uint32(p.cfg.BufSize + 4)
	if mfs > stdFrameFCS {
		hlreg0 |= hlreg0JumboEn
	} else {
		mfs = stdFrameFCS
		hlreg0 &^= hlreg0JumboEn
	}
	r.Write32(regHLREG0, hlreg0)
	r.Write32(regMAXFRS, mfs<<maxfrsShift)
	r.Write32(regRDRXCTL, r.Read32(regRDRXCTL)|rdrxctlCRCStrip)
	fctrl := r.Read32(regFCTRL) | fctrlBAM
	if p.cfg.Promiscuous {
		fctrl |= fctrlMPE | fctrlUPE
	} else {
		fctrl &^= fctrlMPE | fctrlUPE
	}
	r.Write32(regFCTRL, fctrl)
	bsize := uint32(p.cfg.BufSize/1024) & srrctlBSizePktMask
	for i := 0; i < p.NumRxQueues(); i++ {
		srrctl := r.Read32(regSRRCTL(i))
		srrctl &^= srrctlDescTypeMask | srrctlBSizePktMask
		srrctl |= srrctlDescAdvOneBuf | bsize<<srrctlBSizePktShift | srrctlDropEn
		r.Write32(regSRRCTL(i), srrctl)
		intel.ProgramRxRing(&p.Port, i)
		r.Write32(regDCARXCTRL(i), r.Read32(regDCARXCTRL(i))&^dcaRxCtrlDescWBRO)
	}
	r.Write32(regCTRLEXT, r.Read32(regCTRLEXT)|ctrlExtNSDis)
	p.setupRSS()
	for i := 0; i < p.NumRxQueues(); i++ {
		r.Write32(regRXDCTL(i), r.Read32(regRXDCTL(i))|dxctlEnable)
		if err := intel.WaitSet(r, regRXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable rx queue %d: %w", i, err)
		}
		p.RxQueue(i).Fill() // writes RDT
	}
	return nil
}

// enableRx sets RXCTRL.RXEN, the last step of datasheet section 4.6.7. On the 82599 the
// receive data path is halted around it (SECRXCTRL.RX_DIS, then SECRXSTAT.SECRX_RDY):
// a silicon erratum can hang the RX DMA if traffic arrives while RXEN is being set.
// Linux waits up to 300 µs for SECRX_RDY and goes on without it; so does this.
func (p *Port) enableRx() {
	r := p.bar
	if p.fam != family82599 {
		r.Write32(regRXCTRL, r.Read32(regRXCTRL)|rxctrlRXEN)
		return
	}
	r.Write32(regSECRXCTRL, r.Read32(regSECRXCTRL)|secrxctrlRxDis)
	_ = intel.WaitSet(r, regSECRXSTAT, secrxstatRdy, 300*time.Microsecond)
	r.Write32(regRXCTRL, r.Read32(regRXCTRL)|rxctrlRXEN)
	r.Write32(regSECRXCTRL, r.Read32(regSECRXCTRL)&^secrxctrlRxDis)
}

// TXDCTL thresholds: prefetch when 32 descriptors are free, write back at once.
const txdctlThresholds = 32

// initTx is datasheet section 4.6.8: CRC and padding, the rings, DMA transmit enable,
// then the queues enabled.
func (p *Port) initTx() error {
	r := p.bar
	r.Write32(regHLREG0, r.Read32(regHLREG0)|hlreg0TxCRCEn|hlreg0TxPadEn)
	for i := 0; i < p.NumTxQueues(); i++ {
		intel.ProgramTxRing(&p.Port, i)
		txdctl := r.Read32(regTXDCTL(i))
		txdctl &^= 0x7f | 0x7f<<8 | 0x7f<<16
		txdctl |= txdctlThresholds
		r.Write32(regTXDCTL(i), txdctl)
	}
	r.Write32(regDMATXCTL, r.Read32(regDMATXCTL)|dmatxctlTE)
	for i := 0; i < p.NumTxQueues(); i++ {
		r.Write32(regTXDCTL(i), r.Read32(regTXDCTL(i))|dxctlEnable)
		if err := intel.WaitSet(r, regTXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable tx queue %d: %w", i, err)
		}
	}
	return nil
}

// waitLink waits up to timeout for link-up and reports the state it saw last.
func (p *Port) waitLink(timeout time.Duration) bool {
	err := intel.WaitSet(p.bar, regLINKS, linksUp, timeout)
	return err == nil
}
