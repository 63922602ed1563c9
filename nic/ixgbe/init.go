package ixgbe

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/uiod/uiod/pci"
)

// errTimeout is wrapped by the errors of bounded register waits.
var errTimeout = errors.New("timed out")

// waitBits polls register off until (value & mask) == want or the timeout passes.
func waitBits(r pci.Region, off, mask, want uint32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	sleep := time.Microsecond
	for {
		v := r.Read32(off)
		if v&mask == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("register 0x%05x = 0x%08x, waiting for 0x%08x under mask 0x%08x: %w", off, v, want, mask, errTimeout)
		}
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}

func waitSet(r pci.Region, off, bits uint32, timeout time.Duration) error {
	return waitBits(r, off, bits, bits, timeout)
}

func waitClear(r pci.Region, off, bits uint32, timeout time.Duration) error {
	return waitBits(r, off, bits, 0, timeout)
}

// resetHW is datasheet section 4.6.3: mask interrupts, global reset, mask again, wait for
// the EEPROM auto-read and the DMA init.
func (p *Port) resetHW() error {
	r := p.bar
	r.Write32(regEIMC, eimcAll)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlResetMask)
	if err := waitClear(r, regCTRL, ctrlResetMask, time.Second); err != nil {
		return fmt.Errorf("global reset: %w", err)
	}
	time.Sleep(10 * time.Millisecond) // the datasheet asks for at least 10 ms before further access
	r.Write32(regEIMC, eimcAll)
	if err := waitSet(r, p.fam.eecOffset(), eecAutoReadDone, time.Second); err != nil {
		return fmt.Errorf("eeprom auto-read: %w", err)
	}
	if err := waitSet(r, regRDRXCTL, rdrxctlDMAIDone, time.Second); err != nil {
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

// readMAC reads the station address from receive address 0, which the NIC loads from its
// EEPROM. A missing or invalid address is replaced by a random locally administered one.
func (p *Port) readMAC() error {
	lo, hi := p.bar.Read32(regRAL0), p.bar.Read32(regRAH0)
	mac := net.HardwareAddr{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&rahAddrValid == 0 || mac[0]&1 != 0 || (lo == 0 && hi&0xffff == 0) {
		if _, err := rand.Read(mac); err != nil {
			return fmt.Errorf("random mac: %w", err)
		}
		mac[0] = mac[0]&^1 | 2 // unicast, locally administered
		p.bar.Write32(regRAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
		p.bar.Write32(regRAH0, uint32(mac[4])|uint32(mac[5])<<8|rahAddrValid)
	}
	p.mac = mac
	return nil
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
	for i, q := range p.rx {
		srrctl := r.Read32(regSRRCTL(i))
		srrctl &^= srrctlDescTypeMask | srrctlBSizePktMask
		srrctl |= srrctlDescAdvOneBuf | bsize<<srrctlBSizePktShift | srrctlDropEn
		r.Write32(regSRRCTL(i), srrctl)
		r.Write32(regRDBAL(i), uint32(q.IOVA()))
		r.Write32(regRDBAH(i), uint32(q.IOVA()>>32))
		r.Write32(regRDLEN(i), uint32(q.Len()))
		r.Write32(regRDH(i), 0)
		r.Write32(regRDT(i), 0)
		r.Write32(regDCARXCTRL(i), r.Read32(regDCARXCTRL(i))&^dcaRxCtrlDescWBRO)
	}
	r.Write32(regCTRLEXT, r.Read32(regCTRLEXT)|ctrlExtNSDis)
	p.setupRSS()
	for i, q := range p.rx {
		r.Write32(regRXDCTL(i), r.Read32(regRXDCTL(i))|dxctlEnable)
		if err := waitSet(r, regRXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable rx queue %d: %w", i, err)
		}
		q.Fill() // writes RDT
	}
	return nil
}

// TXDCTL thresholds: prefetch when 32 descriptors are free, write back at once.
const txdctlThresholds = 32

// initTx is datasheet section 4.6.8: CRC and padding, the rings, DMA transmit enable,
// then the queues enabled.
func (p *Port) initTx() error {
	r := p.bar
	r.Write32(regHLREG0, r.Read32(regHLREG0)|hlreg0TxCRCEn|hlreg0TxPadEn)
	for i, q := range p.tx {
		r.Write32(regTDBAL(i), uint32(q.IOVA()))
		r.Write32(regTDBAH(i), uint32(q.IOVA()>>32))
		r.Write32(regTDLEN(i), uint32(q.Len()))
		r.Write32(regTDH(i), 0)
		r.Write32(regTDT(i), 0)
		txdctl := r.Read32(regTXDCTL(i))
		txdctl &^= 0x7f | 0x7f<<8 | 0x7f<<16
		txdctl |= txdctlThresholds
		r.Write32(regTXDCTL(i), txdctl)
	}
	r.Write32(regDMATXCTL, r.Read32(regDMATXCTL)|dmatxctlTE)
	for i := range p.tx {
		r.Write32(regTXDCTL(i), r.Read32(regTXDCTL(i))|dxctlEnable)
		if err := waitSet(r, regTXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable tx queue %d: %w", i, err)
		}
	}
	return nil
}

// waitLink waits up to timeout for link-up and reports the state it saw last.
func (p *Port) waitLink(timeout time.Duration) bool {
	err := waitSet(p.bar, regLINKS, linksUp, timeout)
	return err == nil
}
