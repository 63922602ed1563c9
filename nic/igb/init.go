package igb

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/uiod/uiod/pci"
)

var errTimeout = errors.New("timed out")

// waitBits polls register off until (value & mask) == want or the timeout passes.
func waitBits(r pci.Region, off, mask, want uint32, timeout time.Duration) (uint32, error) {
	deadline := time.Now().Add(timeout)
	sleep := time.Microsecond
	for {
		v := r.Read32(off)
		if v&mask == want {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("register 0x%05x = 0x%08x, waiting for 0x%08x under mask 0x%08x: %w", off, v, want, mask, errTimeout)
		}
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}

func waitSet(r pci.Region, off, bits uint32, timeout time.Duration) error {
	_, err := waitBits(r, off, bits, bits, timeout)
	return err
}

func waitClear(r pci.Region, off, bits uint32, timeout time.Duration) error {
	_, err := waitBits(r, off, bits, 0, timeout)
	return err
}

// resetHW masks interrupts, stops receive and transmit, issues a global reset, masks
// again and waits for the EEPROM auto-read (82576 datasheet 4.5).
func (p *Port) resetHW() error {
	r := p.bar
	r.Write32(regIMC, allInterrupts)
	r.Write32(regEIMC, allInterrupts)
	r.Write32(regRCTL, 0)
	r.Write32(regTCTL, tctlPSP)
	r.Read32(regSTATUS) // flush
	time.Sleep(time.Millisecond)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlReset)
	time.Sleep(time.Millisecond) // no register access right after a reset
	if err := waitClear(r, regCTRL, ctrlReset, time.Second); err != nil {
		return fmt.Errorf("global reset: %w", err)
	}
	r.Write32(regIMC, allInterrupts)
	r.Write32(regEIMC, allInterrupts)
	// Auto-read done says the NVM has been read. A part without one never sets it: QEMU's
	// igb, whose EECD reads 0x1110 (FWE_DIS, PRES, size) forever. Like Linux's igb
	// (igb_reset_hw_82575), wait a little and go on without it; readMAC copes with a
	// missing address.
	_ = waitSet(r, p.fam.eecOffset(), eecdAutoRead, 10*time.Millisecond)
	r.Write32(regCTRLEXT, r.Read32(regCTRLEXT)|ctrlExtDrvLoad)
	return nil
}

// readMAC reads receive address 0; a missing address is replaced by a random locally
// administered one.
func (p *Port) readMAC() error {
	lo, hi := p.bar.Read32(regRAL0), p.bar.Read32(regRAH0)
	mac := net.HardwareAddr{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&rahAddrValid == 0 || mac[0]&1 != 0 || (lo == 0 && hi&0xffff == 0) {
		if _, err := rand.Read(mac); err != nil {
			return fmt.Errorf("random mac: %w", err)
		}
		mac[0] = mac[0]&^1 | 2
		p.bar.Write32(regRAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
		p.bar.Write32(regRAH0, uint32(mac[4])|uint32(mac[5])<<8|rahAddrValid)
	}
	p.mac = mac
	return nil
}

// readPHY reads a PHY register through MDIC.
func (p *Port) readPHY(reg uint32) (uint16, error) {
	p.bar.Write32(regMDIC, reg<<mdicRegShift|phyAddr<<mdicPHYShift|mdicOpRead)
	v, err := waitBits(p.bar, regMDIC, mdicReady, mdicReady, 100*time.Millisecond)
	if err != nil {
		return 0, fmt.Errorf("read phy register %d: %w", reg, err)
	}
	if v&mdicError != 0 {
		return 0, fmt.Errorf("read phy register %d: mdic error", reg)
	}
	return uint16(v), nil
}

// writePHY writes a PHY register through MDIC.
func (p *Port) writePHY(reg uint32, val uint16) error {
	p.bar.Write32(regMDIC, uint32(val)|reg<<mdicRegShift|phyAddr<<mdicPHYShift|mdicOpWrite)
	v, err := waitBits(p.bar, regMDIC, mdicReady, mdicReady, 100*time.Millisecond)
	if err != nil {
		return fmt.Errorf("write phy register %d: %w", reg, err)
	}
	if v&mdicError != 0 {
		return fmt.Errorf("write phy register %d: mdic error", reg)
	}
	return nil
}

// startLink lets the MAC follow the PHY (set link up, no forced speed) and restarts
// auto-negotiation; waitLink then waits for its result.
func (p *Port) startLink() error {
	r := p.bar
	r.Write32(regCTRL, r.Read32(regCTRL)&^(ctrlFrcSpd|ctrlFrcDpx)|ctrlSLU)
	bmcr, err := p.readPHY(phyBMCR)
	if err != nil {
		return err
	}
	return p.writePHY(phyBMCR, bmcr|bmcrANEnable|bmcrANRestart)
}

// waitLink waits up to timeout for STATUS.LU.
func (p *Port) waitLink(timeout time.Duration) bool {
	return waitSet(p.bar, regSTATUS, statusLU, timeout) == nil
}

// RXDCTL thresholds: prefetch 8, host 8, write back each descriptor at once.
const rxdctlThresholds = 8 | 8<<8 | 1<<16

// initRx programs the receive queues, RSS and the receive control register (82576
// datasheet 4.5.9), then enables receive.
func (p *Port) initRx() error {
	r := p.bar
	r.Write32(regRCTL, r.Read32(regRCTL)&^rctlEN)
	bsize := uint32(p.cfg.BufSize/1024) & srrctlBSizePktMask
	for i, q := range p.rx {
		srrctl := r.Read32(regSRRCTL(i))
		srrctl &^= srrctlDescTypeMask | srrctlBSizePktMask
		srrctl |= srrctlDescAdvOneBuf | bsize | srrctlDropEn
		r.Write32(regSRRCTL(i), srrctl)
		r.Write32(regRDBAL(i), uint32(q.IOVA()))
		r.Write32(regRDBAH(i), uint32(q.IOVA()>>32))
		r.Write32(regRDLEN(i), uint32(q.Len()))
		r.Write32(regRDH(i), 0)
		r.Write32(regRDT(i), 0)
		r.Write32(regRXDCTL(i), rxdctlThresholds|dxctlEnable)
		if err := waitSet(r, regRXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable rx queue %d: %w", i, err)
		}
	}
	p.setupRSS()
	rctl := r.Read32(regRCTL) | rctlEN | rctlBAM | rctlSECRC
	// Accept frames up to the buffer size (FCS stripped): long packets beyond 1518 bytes.
	if mfs := uint32(p.cfg.BufSize + 4); mfs > stdFrameFCS {
		rctl |= rctlLPE
		r.Write32(regRLPML, mfs)
	} else {
		rctl &^= rctlLPE
	}
	if p.cfg.Promiscuous {
		rctl |= rctlUPE | rctlMPE
	} else {
		rctl &^= rctlUPE | rctlMPE
	}
	r.Write32(regRCTL, rctl)
	for _, q := range p.rx {
		q.Fill() // writes RDT
	}
	return nil
}

// initTx programs the transmit queues and enables transmit (82576 datasheet 4.5.10).
func (p *Port) initTx() error {
	r := p.bar
	r.Write32(regTCTL, tctlConfigure)
	for i, q := range p.tx {
		r.Write32(regTDBAL(i), uint32(q.IOVA()))
		r.Write32(regTDBAH(i), uint32(q.IOVA()>>32))
		r.Write32(regTDLEN(i), uint32(q.Len()))
		r.Write32(regTDH(i), 0)
		r.Write32(regTDT(i), 0)
		r.Write32(regTXDCTL(i), r.Read32(regTXDCTL(i))|dxctlEnable)
		if err := waitSet(r, regTXDCTL(i), dxctlEnable, time.Second); err != nil {
			return fmt.Errorf("enable tx queue %d: %w", i, err)
		}
	}
	r.Write32(regTCTL, tctlConfigure|tctlEN)
	return nil
}

// RSSKey is the Toeplitz key the driver programs (Microsoft's RSS specification key).
var RSSKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// setupRSS spreads flows over the RX queues when there is more than one.
func (p *Port) setupRSS() {
	n := len(p.rx)
	if n < 2 {
		return
	}
	r := p.bar
	for i := 0; i < len(RSSKey)/4; i++ {
		k := RSSKey[4*i:]
		r.Write32(regRSSRK(i), uint32(k[0])|uint32(k[1])<<8|uint32(k[2])<<16|uint32(k[3])<<24)
	}
	for i := 0; i < retaSize/4; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= uint32((4*i+j)%n) << (8 * j)
		}
		r.Write32(regRETA(i), v)
	}
	r.Write32(regMRQC, mrqcRSS|mrqcRSSFields)
}
