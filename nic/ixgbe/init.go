package ixgbe

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/nic/internal/intel"
)

// resetHW is datasheet section 4.6.3: mask interrupts, global reset, mask again, wait for
// the EEPROM auto-read and the DMA init. It then takes the device from the firmware
// (CTRL_EXT.DRV_LOAD, Linux's ixgbe_get_hw_control) and clears the multicast, VLAN and
// unicast hash filter tables the reset leaves undefined.
//
// A reset already under way (the function-level reset a backend may issue when it opens
// the device) must end before the first write: the NIC ignores writes while CTRL.RST
// reads 1.
func (p *Port) resetHW() error {
	r := p.bar
	if err := intel.WaitClear(r, regCTRL, ctrlResetMask, time.Second); err != nil {
		return fmt.Errorf("reset under way: %w", err)
	}
	r.Write32(regEIMC, eimcAll)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlResetMask)
	if err := intel.WaitClear(r, regCTRL, ctrlResetMask, time.Second); err != nil {
		return fmt.Errorf("global reset: %w", err)
	}
	time.Sleep(10 * time.Millisecond) // the datasheet asks for at least 10 ms before further access
	r.Write32(regEIMC, eimcAll)
	if err := intel.WaitSet(r, regEEC, eecAutoReadDone, time.Second); err != nil {
		return fmt.Errorf("eeprom auto-read: %w", err)
	}
	if err := intel.WaitSet(r, regRDRXCTL, rdrxctlDMAIDone, time.Second); err != nil {
		return fmt.Errorf("dma init: %w", err)
	}
	r.Write32(regCTRLEXT, r.Read32(regCTRLEXT)|ctrlExtDrvLoad)
	intel.ClearTables(r, regVFTA, regUTA)
	return nil
}

// initRx is datasheet section 4.6.7: receive off, CRC strip, filters, per queue SRRCTL
// and the ring, RSS, then the queues enabled and their rings filled. RXCTRL.RXEN is set by
// open once transmit is up too.
func (p *Port) initRx() error {
	r := p.bar
	r.Write32(regRXCTRL, r.Read32(regRXCTRL)&^rxctrlRXEN)
	// Accept frames up to the buffer size (FCS stripped): jumbo frames beyond 1518 bytes,
	// up to the 82599's 9728.
	hlreg0 := r.Read32(regHLREG0) | hlreg0RxCRCStrp
	mfs := min(uint32(p.cfg.BufSize+4), maxFrameFCS)
	if mfs > stdFrameFCS {
		hlreg0 |= hlreg0JumboEn
	} else {
		mfs = stdFrameFCS
		hlreg0 &^= hlreg0JumboEn
	}
	r.Write32(regHLREG0, hlreg0)
	r.Write32(regMAXFRS, mfs<<maxfrsShift)
	rdrxctl := r.Read32(regRDRXCTL) &^ rdrxctlRSCFrstSize
	r.Write32(regRDRXCTL, rdrxctl|rdrxctlRSCACKC|rdrxctlFCoEWrFix|rdrxctlCRCStrip)
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

// secRxTimeout bounds the wait for the receive security path to drain: Linux's
// ixgbe_disable_rx_buff_generic and DPDK's ixgbe_disable_sec_rx_path_generic poll
// SECRXSTAT.SECRX_RDY 40 times 1 ms apart.
const secRxTimeout = 40 * time.Millisecond

// enableRx sets RXCTRL.RXEN, the last step of datasheet section 4.6.7. The receive data
// path is halted around it (SECRXCTRL.RX_DIS, then SECRXSTAT.SECRX_RDY): a silicon
// erratum can hang the RX DMA if traffic arrives while RXEN is being set. Like Linux
// (ixgbe_enable_rx_dma_82599) it waits up to secRxTimeout for SECRX_RDY and goes on
// without it.
func (p *Port) enableRx() {
	r := p.bar
	r.Write32(regSECRXCTRL, r.Read32(regSECRXCTRL)|secrxctrlRxDis)
	_ = intel.WaitSet(r, regSECRXSTAT, secrxstatRdy, secRxTimeout)
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
