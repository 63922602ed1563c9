package igbvf

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// handshake resets the VF and runs the mailbox bring-up with the PF (Linux igbvf's
// e1000_reset_hw_vf, then igbvf_configure): VTCTRL.RST, the wait for RSTI and RSTD to
// clear, VF_RESET (whose reply carries the MAC the PF assigned), SET_LPE with the
// receive size, and multicast. There is no API negotiation: Linux's igb PF has one
// mailbox API and no such message (it logs "Unhandled Msg" for one), and Linux's igbvf
// sends none. mbMu is held.
func (p *Port) handshake() error {
	b := &p.mbx
	p.bar.Write32(i82576.VTCTRL, intelnic.CtrlReset)
	b.cache = 0
	deadline := time.Now().Add(resetTimeout)
	for b.take(i82576.MbxRSTI | i82576.MbxRSTD) {
		if time.Now().After(deadline) {
			return fmt.Errorf("vf reset: RSTI/RSTD still set after %v: %w (is the PF's interface up?)", resetTimeout, errPFReset)
		}
		time.Sleep(10 * time.Microsecond)
	}
	w, err := b.call([]uint32{i82576.MsgVFReset}, 3)
	if err != nil {
		return fmt.Errorf("vf reset: %w", err)
	}
	var mac net.HardwareAddr
	switch w[0] &^ i82576.MsgCTS {
	case i82576.MsgVFReset | i82576.MsgAck:
		var a [8]byte
		binary.LittleEndian.PutUint32(a[0:], w[1])
		binary.LittleEndian.PutUint32(a[4:], w[2])
		mac = net.HardwareAddr(a[:6:6])
		if mac[0]&1 != 0 {
			return fmt.Errorf("vf reset: the PF gave the VF the address %v, not a unicast one", mac)
		}
		if string(mac) != "\x00\x00\x00\x00\x00\x00" {
			break
		}
		// An ACK with no address: as a NACK (Linux's igbvf takes a zero address for
		// "not assigned by the administrator").
		fallthrough
	case i82576.MsgVFReset | i82576.MsgNack:
		// The PF has no address for the VF: take a random one and have the PF set it, as
		// Linux's igbvf does (the same one again after a later reset: Linux's igb forgets
		// an address the VF chose at every VF reset).
		if mac, err = p.chooseMAC(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("vf reset: the PF answered %#x, neither ACK nor NACK of VF_RESET", w[0])
	}
	p.mac.Store(&mac)
	if err := p.setLPE(); err != nil {
		return err
	}
	return p.setRxMode()
}

// chooseMAC picks a random locally administered address (or keeps the one picked at an
// earlier reset) and asks the PF to set it (SET_MAC_ADDR). mbMu is held.
func (p *Port) chooseMAC() (net.HardwareAddr, error) {
	mac := p.MAC()
	if mac == nil {
		var err error
		if mac, err = randomMAC(); err != nil {
			return nil, err
		}
	}
	ok, err := p.mbx.request(i82576.MsgSetMAC, binary.LittleEndian.Uint32(mac[0:4]), uint32(binary.LittleEndian.Uint16(mac[4:6])))
	switch {
	case err != nil:
		return nil, fmt.Errorf("set mac %v: %w", mac, err)
	case !ok:
		return nil, fmt.Errorf("vf reset: the PF has no MAC address for this VF and refused %v (NACK): set one with ip link set PF vf N mac", mac)
	}
	return mac, nil
}

// randomMAC is a random unicast, locally administered address.
func randomMAC() (net.HardwareAddr, error) {
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		return nil, fmt.Errorf("random mac: %w", err)
	}
	mac[0] = mac[0]&^1 | 2
	return mac, nil
}

// maxFrame is the receive size the driver asks for: a frame of the MTU with a VLAN tag,
// plus the FCS (as Linux igbvf's igbvf_set_rlpml), at most what the PF allows.
func (p *Port) maxFrame() uint32 { return uint32(min(nic.MaxFrame(p.cfg.MTU)+4, MaxFrame)) }

// setLPE asks the PF for the receive size (SET_LPE).
func (p *Port) setLPE() error {
	ok, err := p.mbx.request(i82576.MsgSetLPE, p.maxFrame())
	switch {
	case err != nil:
		return fmt.Errorf("set max frame %d: %w", p.maxFrame(), err)
	case !ok:
		return fmt.Errorf("set max frame %d: the PF refused it (NACK)", p.maxFrame())
	}
	return nil
}

// setRxMode sends the multicast filter the port's user set (SetMulticast; none before:
// the port receives broadcast and its own address) to the PF, whose VF reset cleared it.
// A promiscuous port is refused: a PF gives a VF no unicast promiscuous mode.
func (p *Port) setRxMode() error {
	if p.cfg.Promiscuous {
		return fmt.Errorf("promiscuous: a virtual function cannot receive other stations' unicast frames (the PF filters by its MAC)")
	}
	p.filt.prom = false // the VF reset turned it off
	return p.programMulticast()
}

// RXDCTL and TXDCTL thresholds as the igb driver's (Linux igbvf uses the same values).
const (
	rxdctlThresholds = 8 | 8<<8 | 1<<16
	txdctlThresholds = 8 | 1<<8 | 1<<16
)

// queueTimeout bounds the wait for a queue's enable bit.
const queueTimeout = time.Second

// initRx programs queue 0's receive ring and enables it (posting buffers only the first
// time; a re-initialisation reposts the ring's own, see recover).
func (p *Port) initRx() error {
	if err := p.programRx(); err != nil {
		return err
	}
	p.core.RxQueue(0).Fill()
	p.rxPosted = true
	return nil
}

// programRx writes queue 0's ring, buffer size and descriptor type, and enables it.
func (p *Port) programRx() error {
	r := p.bar
	intel.ProgramRxRing(&p.core, 0)
	bsize := uint32(p.cfg.BufSize/1024) & i82576.SrrctlBSizePktMask
	r.Write32(i82576.VFRXBase+i82576.QSRRCTL, intelnic.SrrctlDescAdvOneBuf|bsize|i82576.SrrctlDropEn)
	ctl := uint32(i82576.VFRXBase + intelnic.QDCTL)
	r.Write32(ctl, rxdctlThresholds|intelnic.DctlEnable)
	if err := intel.WaitSet(r, ctl, intelnic.DctlEnable, queueTimeout); err != nil {
		return fmt.Errorf("enable rx queue 0: %w", err)
	}
	return nil
}

// initTx programs queue 0's transmit ring, turns relaxed ordering of its descriptor
// write-backs off (Linux's igbvf_configure_tx: a write-back must not pass the data
// before it) and enables it.
func (p *Port) initTx() error {
	r := p.bar
	intel.ProgramTxRing(&p.core, 0)
	dca := uint32(i82576.VFTXBase + i82576.QDCATX)
	r.Write32(dca, r.Read32(dca)&^i82576.DcaTxctlTxWBRO)
	ctl := uint32(i82576.VFTXBase + intelnic.QDCTL)
	r.Write32(ctl, txdctlThresholds|intelnic.DctlEnable)
	if err := intel.WaitSet(r, ctl, intelnic.DctlEnable, queueTimeout); err != nil {
		return fmt.Errorf("enable tx queue 0: %w", err)
	}
	return nil
}

// Interrupt vectors: RX queue 0 on 0, the mailbox on 1 (QEMU routes only queue pair 0).
const (
	rxVector   = 0
	mbxVector  = 1
	rxCauseBit = 1 << rxVector
)

// setupInterrupts enables the MSI-X vectors, programs them and starts the mailbox
// vector's watcher.
func (p *Port) setupInterrupts() error {
	kind, ok, err := intel.EnableVectors(&p.core)
	if !ok {
		if err != nil {
			return fmt.Errorf("%w (a virtual function has MSI-X only)", err)
		}
		return nil
	}
	if kind != irq.MSIX {
		return fmt.Errorf("interrupts: %v: a virtual function has MSI-X only", kind)
	}
	p.programInterrupts()
	intel.WatchOther(&p.core, p.mailboxInterrupt)
	return nil
}

// programInterrupts maps RX queue 0 to vector 0 and the mailbox to vector 1
// (VTIVAR, VTIVAR_MISC), sets the RX vector's interval and auto-clear and unmasks the
// mailbox. The RX cause is unmasked by EnableRxInterrupt. No TX cause is mapped. The
// VTEICR write clears a mailbox cause a PF message raised since the VF reset: the
// watcher is woken to look at the mailbox once.
func (p *Port) programInterrupts() {
	if _, ok := p.IRQKind(); !ok {
		return
	}
	r := p.bar
	r.Write32(i82576.VTIVAR0, rxVector|intelnic.IvarValid)
	r.Write32(i82576.VTIVARMisc, mbxVector|intelnic.IvarValid)
	r.Write32(i82576.VTEITR0+4*rxVector, intel.Interval(p.cfg.ITR, ITRUnit, i82576.EitrIntervalMask, i82576.EitrIntervalShift)|i82576.EitrCntIgnr)
	r.Write32(i82576.VTEIAC, rxCauseBit)
	r.Write32(i82576.VTEICR, 1<<i82576.VFVectors-1)
	r.Write32(i82576.VTEIMS, 1<<mbxVector)
	p.kickWatcher()
}
