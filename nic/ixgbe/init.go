package ixgbe

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// resetHW is datasheet section 4.6.3: mask interrupts, global reset, mask again, wait for
// the EEPROM auto-read and the DMA init. It then takes the device from the firmware
// (CTRL_EXT.DRV_LOAD, Linux's ixgbe_get_hw_control) and clears the multicast, VLAN and
// unicast hash filter tables the reset leaves undefined and receive addresses 1-127.
// The reset itself is intel.GlobalReset's, which first waits out one already under way.
func (p *Port) resetHW() error {
	r := p.bar()
	if err := intel.GlobalReset(r, i82599.CtrlResetMask, func() { r.Write32(i82599.EIMC, intelnic.AllCauses) }); err != nil {
		return err
	}
	time.Sleep(10 * time.Millisecond) // the datasheet asks for at least 10 ms before further access
	r.Write32(i82599.EIMC, intelnic.AllCauses)
	if err := intel.WaitSet(r, i82599.EEC, intelnic.EecAutoRead, time.Second); err != nil {
		return fmt.Errorf("eeprom auto-read: %w", err)
	}
	if err := intel.WaitSet(r, i82599.RDRXCTL, i82599.RdrxctlDMAIDone, time.Second); err != nil {
		return fmt.Errorf("dma init: %w", err)
	}
	intel.TakeOver(r, i82599.VFTA, i82599.UTA, i82599.RAREntries, i82599.RAL)
	return nil
}

// initRx is datasheet section 4.6.7: receive off, CRC strip, filters, per queue SRRCTL
// and the ring, RSS, then the queues enabled and their rings filled. RXCTRL.RXEN is set by
// open once transmit is up too.
func (p *Port) initRx() error {
	r := p.bar()
	r.Write32(i82599.RXCTRL, r.Read32(i82599.RXCTRL)&^i82599.RxctrlRXEN)
	// Accept frames of the MTU (MAXFRS counts the FCS and not a VLAN tag, as Linux's
	// ixgbe_set_rx_buffer_len sets it): jumbo frames beyond 1518 bytes, up to the 82599's
	// 9728. The ring drops what is longer than the MTU allows.
	hlreg0 := r.Read32(i82599.HLREG0) | i82599.Hlreg0RxCRCStrp
	mfs := min(uint32(p.cfg().MTU+nic.EthHeader+intelnic.FCSLen), i82599.MaxFrameFCS)
	if mfs > intelnic.StdFrameFCS {
		hlreg0 |= i82599.Hlreg0JumboEn
	} else {
		mfs = intelnic.StdFrameFCS
		hlreg0 &^= i82599.Hlreg0JumboEn
	}
	r.Write32(i82599.HLREG0, hlreg0)
	r.Write32(i82599.MAXFRS, mfs<<i82599.MaxfrsShift)
	rdrxctl := r.Read32(i82599.RDRXCTL) &^ i82599.RdrxctlRSCFrstSize
	r.Write32(i82599.RDRXCTL, rdrxctl|i82599.RdrxctlRSCACKC|i82599.RdrxctlFCoEWrFix|i82599.RdrxctlCRCStrip)
	fctrl := r.Read32(i82599.FCTRL) | i82599.FctrlBAM
	if p.cfg().Promiscuous {
		fctrl |= i82599.FctrlMPE | i82599.FctrlUPE
	} else {
		fctrl &^= i82599.FctrlMPE | i82599.FctrlUPE
	}
	r.Write32(i82599.FCTRL, fctrl)
	bsize := uint32(p.cfg().BufSize/1024) & i82599.SrrctlBSizePktMask
	for i := 0; i < p.NumRxQueues(); i++ {
		srrctl := r.Read32(i82599.SRRCTL(i))
		srrctl &^= intelnic.SrrctlDescTypeMask | i82599.SrrctlBSizePktMask
		srrctl |= intelnic.SrrctlDescAdvOneBuf | bsize<<i82599.SrrctlBSizePktShift | i82599.SrrctlDropEn
		r.Write32(i82599.SRRCTL(i), srrctl)
		intel.ProgramRxRing(&p.core, i)
		r.Write32(i82599.DCARXCTRL(i), r.Read32(i82599.DCARXCTRL(i))&^i82599.DcaRxCtrlDescWBRO)
	}
	r.Write32(intelnic.CTRLEXT, r.Read32(intelnic.CTRLEXT)|i82599.CtrlExtNSDis)
	p.setupRSS()
	for i := 0; i < p.NumRxQueues(); i++ {
		r.Write32(i82599.RXDCTL(i), r.Read32(i82599.RXDCTL(i))|intelnic.DctlEnable)
		if err := intel.WaitSet(r, i82599.RXDCTL(i), intelnic.DctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable rx queue %d: %w", i, err)
		}
		p.core.RxQueue(i).Fill() // writes RDT
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
	r := p.bar()
	r.Write32(i82599.SECRXCTRL, r.Read32(i82599.SECRXCTRL)|i82599.SecrxctrlRxDis)
	_ = intel.WaitSet(r, i82599.SECRXSTAT, i82599.SecrxstatRdy, secRxTimeout)
	r.Write32(i82599.RXCTRL, r.Read32(i82599.RXCTRL)|i82599.RxctrlRXEN)
	r.Write32(i82599.SECRXCTRL, r.Read32(i82599.SECRXCTRL)&^i82599.SecrxctrlRxDis)
}

// TXDCTL thresholds: prefetch when 32 descriptors are free, write back at once.
const txdctlThresholds = 32 << i82599.TxdctlPthreshShift

// initTx is datasheet section 4.6.8: CRC and padding, the rings, DMA transmit enable,
// then the queues enabled.
func (p *Port) initTx() error {
	r := p.bar()
	r.Write32(i82599.HLREG0, r.Read32(i82599.HLREG0)|i82599.Hlreg0TxCRCEn|i82599.Hlreg0TxPadEn)
	for i := 0; i < p.NumTxQueues(); i++ {
		intel.ProgramTxRing(&p.core, i)
		txdctl := r.Read32(i82599.TXDCTL(i))
		txdctl &^= i82599.TxdctlThresholds
		txdctl |= txdctlThresholds
		r.Write32(i82599.TXDCTL(i), txdctl)
		// Descriptor write-backs in order: relaxed ordering off (DPDK's
		// ixgbe_dev_tx_init).
		r.Write32(i82599.DCATXCTRL(i), r.Read32(i82599.DCATXCTRL(i))&^i82599.DcaTxCtrlDescWBRO)
	}
	r.Write32(i82599.DMATXCTL, r.Read32(i82599.DMATXCTL)|i82599.DmatxctlTE)
	for i := 0; i < p.NumTxQueues(); i++ {
		r.Write32(i82599.TXDCTL(i), r.Read32(i82599.TXDCTL(i))|intelnic.DctlEnable)
		if err := intel.WaitSet(r, i82599.TXDCTL(i), intelnic.DctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable tx queue %d: %w", i, err)
		}
	}
	return nil
}
