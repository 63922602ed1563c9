package igb

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// resetHW masks interrupts, stops receive and transmit, issues a global reset, masks
// again and waits for the EEPROM auto-read (82576 datasheet 4.5). It then takes the
// device from the firmware (CTRL_EXT.DRV_LOAD) and clears the multicast, VLAN and
// unicast hash filter tables and receive addresses 1-23 (Linux's igb_init_hw_82575,
// igb_clear_vfta, igb_init_rx_addrs).
// The reset itself is intel.GlobalReset's, which first waits out one already under way.
func (p *Port) resetHW() error {
	r := p.bar()
	err := intel.GlobalReset(r, intelnic.CtrlReset, func() {
		r.Write32(i82576.IMC, intelnic.AllCauses)
		r.Write32(i82576.EIMC, intelnic.AllCauses)
		r.Write32(i82576.RCTL, 0)
		r.Write32(i82576.TCTL, i82576.TctlPSP)
		r.Read32(intelnic.STATUS) // flush
		time.Sleep(time.Millisecond)
	})
	if err != nil {
		return err
	}
	r.Write32(i82576.IMC, intelnic.AllCauses)
	r.Write32(i82576.EIMC, intelnic.AllCauses)
	// Auto-read done says the NVM has been read. A part without one never sets it: QEMU's
	// igb, whose EECD reads 0x1110 (FWE_DIS, PRES, size) forever. Like Linux's igb
	// (igb_reset_hw_82575), wait a little and go on without it; readMAC copes with a
	// missing address.
	_ = intel.WaitSet(r, i82576.EECD, intelnic.EecAutoRead, 10*time.Millisecond)
	intel.TakeOver(r, i82576.VFTA, i82576.UTA, i82576.RAREntries, i82576.RAL)
	return nil
}

// queueDisableTimeout bounds the wait for a queue's enable bit to clear.
const queueDisableTimeout = 100 * time.Millisecond

// disableQueues turns every RX and TX queue off and waits until each reads disabled.
// The 82576 comes out of reset with queue 0 enabled (QEMU's igb_mac_reg_init agrees),
// and a queue's ring registers must not be programmed while it runs: Linux's
// igb_configure_rx_ring and igb_configure_tx_ring write 0 to RXDCTL/TXDCTL first.
func (p *Port) disableQueues() error {
	r := p.bar()
	for _, q := range []struct {
		dir string
		reg func(int) uint32
	}{{"rx", i82576.RXDCTL}, {"tx", i82576.TXDCTL}} {
		for i := 0; i < MaxQueues; i++ {
			off := q.reg(i)
			if r.Read32(off)&intelnic.DctlEnable == 0 {
				continue
			}
			r.Write32(off, 0)
			if err := intel.WaitClear(r, off, intelnic.DctlEnable, queueDisableTimeout); err != nil {
				return fmt.Errorf("disable %s queue %d: %w", q.dir, i, err)
			}
		}
	}
	return nil
}

// readPHY reads a PHY register through MDIC.
func (p *Port) readPHY(reg uint32) (uint16, error) {
	p.bar().Write32(i82576.MDIC, reg<<i82576.MdicRegShift|i82576.PHYAddr<<i82576.MdicPHYShift|i82576.MdicOpRead)
	v, err := intel.WaitBits(p.bar(), i82576.MDIC, i82576.MdicReady, i82576.MdicReady, 100*time.Millisecond)
	if err != nil {
		return 0, fmt.Errorf("read phy register %d: %w", reg, err)
	}
	if v&i82576.MdicError != 0 {
		return 0, fmt.Errorf("read phy register %d: mdic error", reg)
	}
	return uint16(v), nil
}

// writePHY writes a PHY register through MDIC.
func (p *Port) writePHY(reg uint32, val uint16) error {
	p.bar().Write32(i82576.MDIC, uint32(val)|reg<<i82576.MdicRegShift|i82576.PHYAddr<<i82576.MdicPHYShift|i82576.MdicOpWrite)
	v, err := intel.WaitBits(p.bar(), i82576.MDIC, i82576.MdicReady, i82576.MdicReady, 100*time.Millisecond)
	if err != nil {
		return fmt.Errorf("write phy register %d: %w", reg, err)
	}
	if v&i82576.MdicError != 0 {
		return fmt.Errorf("write phy register %d: mdic error", reg)
	}
	return nil
}

// RXDCTL thresholds: prefetch 8, host 8, write back each descriptor at once.
const rxdctlThresholds = 8 | 8<<8 | 1<<16

// initRx programs the receive queues, RSS and the receive control register (82576
// datasheet 4.5.9), then enables receive.
func (p *Port) initRx() error {
	r := p.bar()
	r.Write32(i82576.RCTL, r.Read32(i82576.RCTL)&^i82576.RctlEN)
	bsize := uint32(p.cfg().BufSize/1024) & i82576.SrrctlBSizePktMask
	for i := 0; i < p.NumRxQueues(); i++ {
		srrctl := r.Read32(i82576.SRRCTL(i))
		srrctl &^= intelnic.SrrctlDescTypeMask | i82576.SrrctlBSizePktMask
		srrctl |= intelnic.SrrctlDescAdvOneBuf | bsize | i82576.SrrctlDropEn
		r.Write32(i82576.SRRCTL(i), srrctl)
		intel.ProgramRxRing(&p.core, i)
		r.Write32(i82576.RXDCTL(i), rxdctlThresholds|intelnic.DctlEnable)
		if err := intel.WaitSet(r, i82576.RXDCTL(i), intelnic.DctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable rx queue %d: %w", i, err)
		}
	}
	p.setupRSS()
	rctl := r.Read32(i82576.RCTL) | i82576.RctlEN | i82576.RctlBAM | i82576.RctlSECRC
	// Accept frames of the MTU with one VLAN tag and the FCS (RLPML, as Linux's
	// igb_set_rlpml sizes it for its max_frame_size): long packets beyond 1518 bytes. The
	// ring drops an untagged frame longer than the MTU allows.
	if mfs := uint32(nic.MaxFrame(p.cfg().MTU) + intelnic.FCSLen); mfs > intelnic.StdFrameFCS {
		rctl |= i82576.RctlLPE
		r.Write32(i82576.RLPML, min(mfs, i82576.RlpmlMax))
	} else {
		rctl &^= i82576.RctlLPE
	}
	if p.cfg().Promiscuous {
		rctl |= i82576.RctlUPE | i82576.RctlMPE
	} else {
		rctl &^= i82576.RctlUPE | i82576.RctlMPE
	}
	r.Write32(i82576.RCTL, rctl)
	for i := 0; i < p.NumRxQueues(); i++ {
		p.core.RxQueue(i).Fill() // writes RDT
	}
	return nil
}

// TXDCTL thresholds: prefetch 8, host 1, write back each descriptor (Linux igb's
// IGB_TX_PTHRESH, IGB_TX_HTHRESH, and IGB_TX_WTHRESH for the 82576 with MSI-X).
const txdctlThresholds = 8 | 1<<8 | 1<<16

// initTx programs the transmit queues and enables transmit (82576 datasheet 4.5.10).
func (p *Port) initTx() error {
	r := p.bar()
	r.Write32(i82576.TCTL, i82576.TctlConfigure)
	for i := 0; i < p.NumTxQueues(); i++ {
		intel.ProgramTxRing(&p.core, i)
		// Descriptor write-backs in order: relaxed ordering off, as DPDK's eth_igb_tx_init
		// turns it off.
		r.Write32(i82576.DCATXCTRL(i), r.Read32(i82576.DCATXCTRL(i))&^i82576.DcaTxctlTxWBRO)
		r.Write32(i82576.TXDCTL(i), txdctlThresholds|intelnic.DctlEnable)
		if err := intel.WaitSet(r, i82576.TXDCTL(i), intelnic.DctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable tx queue %d: %w", i, err)
		}
	}
	r.Write32(i82576.TCTL, i82576.TctlConfigure|i82576.TctlEN)
	return nil
}

// RSSKey is the Toeplitz key the driver programs (Microsoft's RSS specification key).
var RSSKey = intel.RSSKey

// setupRSS spreads flows over the RX queues when there is more than one. IPv6 TCP is
// enabled by both of its bits, as Linux's igb_setup_mrqc does: QEMU's igb reads only the
// one for IPv6 TCP with extension headers (bit 18), the silicon either.
func (p *Port) setupRSS() {
	intel.SetupRSS(&p.core, &RSSKey, i82576.MrqcRSS|intelnic.MrqcRSSFields|i82576.MrqcIPv6TCPEx)
}
