// Package igbvf models an Intel 82576 virtual function (8086:10ca) with the PF that owns
// it, so that the nic/igbvf driver runs against it without hardware or privileges.
//
// The VF's datapath is the sim/intel 82576 engine: the VF's BAR0 maps its queue 0, its
// interrupt registers and its status onto the engine's PF registers, as QEMU's igbvf
// does, and everything the engine checks (ring latching, queue enable timing, DMA
// through the IOMMU, write-back order, fault injection) it checks for the VF. What a VF
// has of its own is modelled here: VTCTRL.RST (a VF reset that disables its queues and
// interrupts and raises RSTI until the queues read disabled, then RSTD), statistics that
// count and wrap instead of clearing on read, three MSI-X vectors and no INTx, and the
// PF↔VF mailbox (V2PMAILBOX, VMBMEM) with a PF driver behind it that answers as Linux's
// igb does (igb_rcv_msg_from_vf, igb_rcv_ack_from_vf, igb_vf_reset_event):
//   - VF_RESET with the MAC the PF has for the VF and clear to send, NACK when it has
//     none. A VF reset (VTCTRL.RST, FLR) forgets an address the VF chose itself
//     (SET_MAC_ADDR): only the administrator's survives it, so a VF without one goes
//     NACK → SET_MAC_ADDR at every reset;
//   - SET_MAC_ADDR, refused whatever the address once the administrator set the MAC (the
//     VF is not trusted);
//   - SET_MULTICAST: up to 30 hashes are filtered, more turn multicast promiscuous on;
//   - SET_LPE: sizes above 9728 bytes are clamped to it, and ACKed;
//   - SET_PROMISC (multicast only; refused with Config.NoMcastPromisc);
//   - NACK for anything else (Linux logs "Unhandled Msg", counted in Stats.Unhandled);
//   - before the reset handshake, silence for 2 s after the VF's reset (the message is
//     taken, PFACK, but not answered; Config.CTSHoldoff), then NACK without CTS; and a
//     bare NACK (no message type) when such a VF acknowledges a PF message, at most
//     once per holdoff.
//
// The buffer is one for both directions, as on the 82576: a PF message written while a
// VF request waits to be taken flushes the request (Linux's igb_write_mbx_pf clears the
// VF's request event: the VF must send it again), and a PF message that finds the VF
// holding the buffer waits for it 10 ms (Linux: 10 tries 1 ms apart), then is lost. A PF
// reset clears the VF's statistics registers, as QEMU's igb_reset does.
//
// Strict (Config.Strict) makes every misuse a protocol fault: mailbox memory touched
// without holding VFU, a REQ without the lock, registers a VF does not have, queue 1,
// vectors beyond the third. The PF's pool filter and its MAC anti-spoof check (which
// QEMU's igb lacks) sit between the engine and the wire: the VF receives broadcast, its
// own unicast address and the multicast hashes it registered, frames up to its SET_LPE
// size, and only while the PF enabled its receive (VFRE); it transmits only with VFTE
// set and only frames whose source address is its own.
//
// The PF's events are test calls: SetAdminMAC ("ip link set PF vf 0 mac ...", which Linux's
// igb announces to no VF: it logs "Reload the VF driver to make this change effective"),
// ResetPF (the PF's own reset, "ip link set PF down": RSTI while it lasts, then RSTD),
// SetLink (a link change, which the PF announces with a control message).
package igbvf

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// Config describes a modelled VF and its PF.
type Config struct {
	Addr pci.Addr
	// MAC is the address the administrator set for the VF ("ip link set PF vf N mac",
	// default 02:00:00:bus:device:function+1): the PF keeps it across VF resets.
	MAC net.HardwareAddr
	// NoMAC: the administrator set no address for the VF. The PF answers VF_RESET with
	// NACK until the VF sets one (SET_MAC_ADDR), and forgets that one at the VF's next
	// reset.
	NoMAC bool
	// Wire is the cable of the PF's port; nil leaves it unplugged until Attach.
	Wire wire.Port
	// IOMMU is a DMA address space shared with other devices, or nil for the VF's own.
	IOMMU *sim.IOMMU
	// Strict makes protocol violations errors (Device().Err()).
	Strict bool
	// Timing and Quirks are the engine's (see sim/intel).
	Timing intel.Timing
	Quirks intel.Quirks
	// NoAntiSpoof lets the VF send any source address, as QEMU's igb does.
	NoAntiSpoof bool
	// NoMcastPromisc makes the PF refuse SET_PROMISC multicast (NACK), as a PF that
	// does not let the VF take every multicast frame would; it still takes "off".
	NoMcastPromisc bool
	// MailboxDelay is how long the PF takes to serve a message (default 50 µs; negative:
	// at once, on the writer's goroutine).
	MailboxDelay time.Duration
	// CTSHoldoff is how long after a VF reset (and after a bare NACK) the PF leaves a VF
	// that is not clear to send unanswered (default 2 s, Linux igb's; negative: none).
	CTSHoldoff time.Duration
	// Log receives fault reports (nil: none).
	Log *zap.Logger
}

// DefaultMailboxDelay is the PF's default time to take a VF's message.
const DefaultMailboxDelay = 50 * time.Microsecond

// DefaultCTSHoldoff is Linux igb's silence towards a VF that is not clear to send.
const DefaultCTSHoldoff = 2 * time.Second

// pfLockTimeout is how long a PF message waits for a VF holding the buffer before it
// is lost (Linux igb_obtain_mbx_lock_pf: 10 tries, 1 ms apart).
const pfLockTimeout = 10 * time.Millisecond

// Stats are what the model counts beyond the engine's counters.
type Stats struct {
	Messages   uint64 // mailbox messages the PF took
	Nacked     uint64 // of them answered NACK
	Overwrites uint64 // PF messages written over one the VF had not acknowledged
	Flushed    uint64 // VF requests a PF message flushed before the PF took them
	Lost       uint64 // PF messages lost: the VF held the buffer longer than 10 ms
	Unhandled  uint64 // messages Linux's igb logs "Unhandled Msg" for
	BareNacks  uint64 // bare NACKs sent to a VF that acknowledged without clear to send
	VFResets   uint64 // VTCTRL.RST and function-level resets
	PFResets   uint64 // ResetPF calls
	Spoofed    uint64 // frames dropped by the anti-spoof check
	TxOff      uint64 // frames sent while the PF had the VF's transmit off (VFTE)
	RxOff      uint64 // frames that arrived while the PF had the VF's receive off (VFRE)
	Filtered   uint64 // frames the pool filter refused (address)
	TooLong    uint64 // frames over the VF's SET_LPE size
}

// Model is a VF with its PF (a sim.Model). PCI is what a driver opens; Device is the
// model core of its engine.
type Model struct {
	cfg     Config
	eng     *intel.Model
	bar     pci.Region // the engine's registers, the PF's view
	vf      *vfDevice
	delay   time.Duration
	holdoff time.Duration

	mu   sync.Mutex // mailbox, PF driver state, VF statistics
	mbx  mailbox
	pf   pfDriver
	stat vfStats

	filt filter // the PF's pool filter and anti-spoof check, its own lock
	st   struct {
		messages, nacked, overwrites, vfResets, pfResets atomic.Uint64
		flushed, lost, unhandled, bareNacks              atomic.Uint64
	}
	closed atomic.Bool
}

// New builds a VF and brings its PF up as Linux's igb does with SR-IOV: the port reset,
// receive on (the pool filter does the VF's address filtering), transmit on, MSI-X mode
// with the mailbox cause unmasked. The VF's queues are off until its driver enables them.
func New(cfg Config) (*Model, error) {
	if cfg.MAC == nil {
		cfg.MAC = net.HardwareAddr{0x02, 0, 0, cfg.Addr.Bus, cfg.Addr.Device, 1 + cfg.Addr.Function}
	}
	if len(cfg.MAC) != 6 || cfg.MAC[0]&1 != 0 {
		return nil, fmt.Errorf("sim igbvf: MAC %v is not a 6-byte unicast address", cfg.MAC)
	}
	m := &Model{cfg: cfg, delay: cfg.MailboxDelay, holdoff: cfg.CTSHoldoff}
	if m.delay == 0 {
		m.delay = DefaultMailboxDelay
	}
	if m.holdoff == 0 {
		m.holdoff = DefaultCTSHoldoff
	}
	m.filt.init(cfg.MAC, !cfg.NoAntiSpoof)
	eng, err := intel.New(intel.Config{
		Addr: cfg.Addr, IOMMU: cfg.IOMMU, Strict: cfg.Strict, Flavor: intel.X82576,
		DeviceID: i82576.VFDeviceID, Timing: cfg.Timing, Quirks: cfg.Quirks, Log: cfg.Log,
	})
	if err != nil {
		return nil, err
	}
	m.eng = eng
	if m.bar, err = eng.Device().Region(0); err != nil {
		eng.Close()
		return nil, err
	}
	if cfg.NoMAC {
		m.filt.setMAC(make(net.HardwareAddr, 6))
		m.pf.init(make(net.HardwareAddr, 6))
	} else {
		m.pf.init(cfg.MAC)
		m.pf.adminMAC = true
	}
	if err := m.pfBringUp(); err != nil {
		eng.Close()
		return nil, fmt.Errorf("sim igbvf: pf bring-up: %w", err)
	}
	m.vf = &vfDevice{Device: eng.Device(), m: m}
	if cfg.Wire != nil {
		m.Attach(cfg.Wire)
	}
	return m, nil
}

// PCI is the VF function a driver opens.
func (m *Model) PCI() pci.Device { return m.vf }

// Device is the strict model core (faults, the IOMMU) the VF's engine runs on.
func (m *Model) Device() *sim.Device { return m.eng.Device() }

// Engine is the 82576 engine behind the VF's queue 0, for fault injection.
func (m *Model) Engine() *intel.Model { return m.eng }

// MAC is the address the PF has for the VF now.
func (m *Model) MAC() net.HardwareAddr { return m.filt.mac() }

// Attach plugs the PF's port into a wire through the pool filter.
func (m *Model) Attach(w wire.Port) {
	m.eng.Attach(m.filt.wrap(w))
}

// SetLink takes the PF's link down or lets it up, and the PF tells the VF with a control
// message (Linux igb pings every VF on a link change).
func (m *Model) SetLink(up bool) {
	m.eng.SetLink(up)
	m.ping()
}

// FlapLink takes the link down for downFor.
func (m *Model) FlapLink(downFor time.Duration) {
	m.SetLink(false)
	if downFor <= 0 {
		m.SetLink(true)
		return
	}
	time.AfterFunc(downFor, func() {
		if !m.closed.Load() {
			m.SetLink(true)
		}
	})
}

// Stats returns the model's own counters.
func (m *Model) Stats() Stats {
	f := m.filt.stats()
	return Stats{
		Messages: m.st.messages.Load(), Nacked: m.st.nacked.Load(), Overwrites: m.st.overwrites.Load(),
		Flushed: m.st.flushed.Load(), Lost: m.st.lost.Load(), Unhandled: m.st.unhandled.Load(), BareNacks: m.st.bareNacks.Load(),
		VFResets: m.st.vfResets.Load(), PFResets: m.st.pfResets.Load(),
		Spoofed: f.spoofed, TxOff: f.txOff, RxOff: f.rxOff, Filtered: f.filtered, TooLong: f.tooLong,
	}
}

// Close closes the device.
func (m *Model) Close() error {
	m.closed.Store(true)
	return m.eng.Close()
}

// fault records a protocol violation by the VF's driver.
func (m *Model) fault(format string, args ...any) {
	d := m.eng.Device()
	d.Lock()
	d.Fault(sim.Fault{Kind: sim.Protocol, Msg: "vf: " + fmt.Sprintf(format, args...)})
	d.Unlock()
}

// pfBringUp is the PF driver's port bring-up, through the engine's registers.
func (m *Model) pfBringUp() error {
	r := m.bar
	if err := waitBits(r, intelnic.CTRL, intelnic.CtrlReset, 0); err != nil {
		return err
	}
	if err := waitBits(r, i82576.EECD, intelnic.EecAutoRead, intelnic.EecAutoRead); err != nil {
		return err
	}
	r.Write32(i82576.IMC, intelnic.AllCauses)
	r.Write32(i82576.EIMC, intelnic.AllCauses)
	for _, off := range []uint32{i82576.RXDCTL(0), i82576.TXDCTL(0)} {
		r.Write32(off, 0) // queue 0 comes out of reset enabled: it is the VF's
		if err := waitBits(r, off, intelnic.DctlEnable, 0); err != nil {
			return err
		}
	}
	r.Write32(i82576.RLPML, i82576.RlpmlMax)
	r.Write32(i82576.RCTL, i82576.RctlEN|i82576.RctlUPE|i82576.RctlMPE|i82576.RctlBAM|i82576.RctlSECRC|i82576.RctlLPE)
	r.Write32(i82576.TCTL, i82576.TctlConfigure|i82576.TctlEN)
	r.Write32(i82576.GPIE, intelnic.GpieMSIXMode|intelnic.GpiePBASupport|i82576.GpieNSICR)
	r.Read32(i82576.ICR)
	r.Write32(i82576.IMS, i82576.IcrVMMB)
	return nil
}

// errTimeout is a wait of the PF bring-up that did not end.
var errTimeout = errors.New("timed out")

// waitBits polls register off of r until (v & mask) == want, for at most a second.
func waitBits(r pci.Region, off, mask, want uint32) error {
	deadline := time.Now().Add(time.Second)
	for r.Read32(off)&mask != want {
		if time.Now().After(deadline) {
			return fmt.Errorf("register 0x%05x: %w", off, errTimeout)
		}
		time.Sleep(10 * time.Microsecond)
	}
	return nil
}

// raiseMailbox raises the VF's mailbox interrupt: the engine's VMMB cause, cleared first
// so that it rises anew, on the vector VTIVAR_MISC names.
func (m *Model) raiseMailbox() {
	if m.closed.Load() {
		return
	}
	m.bar.Read32(i82576.ICR) // GPIE.NSICR: the read clears the causes
	m.bar.Write32(i82576.ICS, i82576.IcrVMMB)
}

// vfDevice is the VF function: the engine's device with the VF's BAR0, three MSI-X
// vectors, no INTx, and a function-level reset that is the VF's.
type vfDevice struct {
	*sim.Device
	m *Model
}

// Region implements pci.Device: BAR0 is the VF's register view.
func (d *vfDevice) Region(bar int) (pci.Region, error) {
	if bar != 0 {
		return nil, fmt.Errorf("sim igbvf %s: BAR%d: no such region", d.Addr(), bar)
	}
	return vfBAR{d.m}, nil
}

// IRQs implements pci.Device: a VF has three MSI-X vectors and no INTx pin.
func (d *vfDevice) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	switch {
	case kind == irq.INTx && n > 0:
		return nil, fmt.Errorf("sim igbvf %s: a virtual function has no INTx: %w", d.Addr(), pci.ErrNotSupported)
	case kind == irq.MSIX && n > i82576.VFVectors:
		return nil, fmt.Errorf("sim igbvf %s: %d msix vectors: a VF has %d", d.Addr(), n, i82576.VFVectors)
	}
	return d.Device.IRQs(kind, n)
}

// Close implements pci.Device.
func (d *vfDevice) Close() error {
	d.m.closed.Store(true)
	return d.Device.Close()
}

// Reset implements pci.Device: a VF's function-level reset, as VTCTRL.RST.
func (d *vfDevice) Reset() error {
	d.m.vfReset()
	return nil
}
