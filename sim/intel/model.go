// Package intel models the Intel 82599 10 GbE controller (and, as a flavour of the same
// engine, the 82576 1 GbE controller) on the sim device-model core, so that the real
// drivers in nic/ixgbe and nic/igb run against it without hardware or privileges. The
// 82599 is the default.
//
// The model implements the registers a driver touches during reset, init and operation
// with their datasheet semantics, RX from a wire into posted advanced descriptors (DD
// stored last), TX on the tail doorbell, the EICR/EIMS/EIMC/EIAC/EIAM/IVAR/EITR interrupt
// logic in MSI-X and legacy INTx mode, RSS, link state with LSC interrupts, read-to-clear
// statistics and per-queue drop counters, and fault injection (Inject).
//
// It is as strict as the silicon: a software reset, the EEPROM auto-read, DMA init, queue
// enables and disables and auto-negotiation take time (Timing) and the driver must poll
// for each; queues latch their ring registers at enable and ignore writes to them while
// on; a tail write before the queue is on is ignored; the 82576 comes out of reset with
// queue 0 enabled; the 82599's link comes up only in a link mode its media takes (and an
// SFP+ port only with its laser on); the 82576's SerDes parts get link only through the
// PCS (pcs.go), and a PHY powered down stays down until a driver clears the bit
// (Config.PoweredDown); the filter tables power up with stray bits and the receive
// addresses beyond the first with a previous owner's; a queue's cause reaches an
// interrupt only through its IVAR entry, in legacy mode too, and 82576 IVAR entries
// written before GPIE switches to MSI-X mode are lost. Each violation is a protocol
// fault, which a strict model (Config.Strict) reports through Device().Err(). A Model
// is a sim.Model; NewPair builds the dual-port adapter. QEMU igb's
// deviations are options (Quirks), so drivers can be tested against both.
//
// Frames on the wire carry no FCS; the model adds four bytes to the byte counters that
// count the FCS (GORC, GOTC), as hardware does, and leaves four FCS bytes in the receive
// buffer when the driver did not enable CRC stripping.
//
// Drivers must load descriptor status words atomically (sim.LoadUint32 or
// sync/atomic): the model stores them last and atomically, so a driver that sees DD sees
// the whole write-back.
package intel

import (
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Flavor selects the controller the model speaks.
type Flavor int

// Flavours.
const (
	// X82599 is the Intel 82599 10 GbE controller (ixgbe).
	X82599 Flavor = iota
	// X82576 is the Intel 82576 1 GbE controller (igb).
	X82576
)

// String names the controller.
func (f Flavor) String() string {
	switch f {
	case X82599:
		return "82599"
	case X82576:
		return "82576"
	}
	return fmt.Sprintf("intel.Flavor(%d)", int(f))
}

// Config describes a modelled port.
type Config struct {
	Addr pci.Addr
	// MAC is the station address the "EEPROM" loads into RAL0/RAH0 (default
	// 02:00:00:bus:device:function+1).
	MAC net.HardwareAddr
	// Wire is the cable; nil leaves the port unplugged (link down) until Attach.
	Wire wire.Port
	// IOMMU is a DMA address space shared with other devices, or nil for the device's own.
	IOMMU *sim.IOMMU
	// Strict makes unknown register accesses, DMA faults and protocol violations errors
	// (Device().Err()).
	Strict bool
	// DeviceID is the PCI device id (default per Flavor).
	DeviceID uint16
	// Flavor selects 82599 (default) or 82576.
	Flavor Flavor
	// Timing sets how long resets, the EEPROM auto-read, DMA init, queue enables and
	// auto-negotiation take (zero fields: short defaults).
	Timing Timing
	// PoweredDown starts the port as Linux leaves one whose interface is down when it
	// hands it over: an 82576 copper port's PHY powered down (igb_power_down_link, BMCR
	// bit 11), an 82599 SFP+ port's laser off (ESDP.SDP3 high,
	// ixgbe_disable_tx_laser_multispeed_fiber).
	// Both survive resets: the link comes up only once a driver powers it up.
	PoweredDown bool
	// Quirks select QEMU igb behaviours instead of the silicon's (see QEMUQuirks).
	Quirks Quirks
	// Log receives fault reports (nil: none).
	Log *zap.Logger
}

// Model is a modelled NIC port (a sim.Model). PCI is what a driver opens.
type Model struct {
	cfg  Config
	dev  *sim.Device
	l    *layout
	regs []sim.Reg

	txMu   sync.Mutex // serialises transmission (gather under dev lock, send after)
	wireMu sync.Mutex
	wire   wire.Port
	txOut  [][]byte // frames gathered for sending, reused

	// Everything below is guarded by the device lock.
	ic        intrState
	link      linkState
	fifo      rxFIFO
	inj       injections
	st        Stats
	rxQueued  [64]uint64 // frames written to each RX queue's ring (RxQueueFrames)
	rssBuf    [64]byte
	rxScratch []byte
	txq       [64]txPartial
	closing   bool
	eeprom    [64]uint16
	phy       phyState
	runt      []byte // a padded runt (Quirks.PadRunts)

	timing     Timing
	ts         tsUnit // the IEEE 1588 unit (timesync.go)
	async      asyncOps
	eepromDone bool
	dmaDone    bool
	rxl, txl   [64]ringLatch
	txHung     uint64 // TX queues stopped by TxHang
	txDelayed  []heldWB
	wbTimer    *time.Timer
	swReset    bool  // the reset under way is CTRL.RST
	secRdyAt   int64 // wire time SECRXSTAT.SECRX_RDY reads 1 after RX_DIS was set
}

// New builds a model. Its registers start at their power-on values, with the MAC address
// loaded into RAL0/RAH0.
func New(cfg Config) (*Model, error) {
	if cfg.Flavor != X82599 && cfg.Flavor != X82576 {
		return nil, fmt.Errorf("sim intel: unknown flavor %v", cfg.Flavor)
	}
	if cfg.DeviceID == 0 {
		cfg.DeviceID = map[Flavor]uint16{X82599: i82599.DeviceSFP, X82576: i82576.DeviceID}[cfg.Flavor]
	}
	if cfg.MAC == nil {
		cfg.MAC = net.HardwareAddr{0x02, 0, 0, cfg.Addr.Bus, cfg.Addr.Device, 1 + cfg.Addr.Function}
	}
	if len(cfg.MAC) != 6 {
		return nil, fmt.Errorf("sim intel: MAC %v is not 6 bytes", cfg.MAC)
	}
	m := &Model{cfg: cfg, timing: cfg.Timing.withDefaults()}
	m.l = layoutFor(cfg.Flavor)
	m.regs = m.registers()
	dev, err := sim.New(sim.Config{
		Addr:         cfg.Addr,
		VendorID:     intelnic.VendorIntel,
		DeviceID:     cfg.DeviceID,
		Revision:     1,
		Class:        uint32(pci.ClassNetwork),
		BAR0Size:     m.l.bar0Size,
		Regs:         m.regs,
		MSIXVectors:  m.l.vectors,
		IOMMU:        cfg.IOMMU,
		Strict:       cfg.Strict,
		Log:          cfg.Log,
		OnReset:      m.resetLocked,
		OnClose:      m.onClose,
		BeforeAccess: m.beforeAccess,
	})
	if err != nil {
		return nil, err
	}
	m.dev = dev
	m.ic.init(m)
	if cfg.PoweredDown {
		m.phy.bmcr = i82576.BmcrPowerDown // kept by the PHY reset in resetLocked
	}
	dev.Lock()
	m.link.wanted = true
	m.resetLocked()
	dev.Unlock()
	if cfg.Wire != nil {
		m.Attach(cfg.Wire)
	}
	return m, nil
}

var _ sim.Model = (*Model)(nil)

// PCI is the function a driver opens.
func (m *Model) PCI() pci.Device { return m.dev }

// Device is the device-model core: faults, the IOMMU, the strict error (and, for the
// Intel model, the same function PCI returns).
func (m *Model) Device() *sim.Device { return m.dev }

// Flavor is the controller the model speaks.
func (m *Model) Flavor() Flavor { return m.cfg.Flavor }

// MAC is the station address loaded at reset.
func (m *Model) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), m.cfg.MAC...) }

// Attach plugs the port into a wire (replacing any previous one): frames from the wire
// are received, transmitted frames go to it, and the link comes up. Transmitted frames are
// sent on the goroutine that rang the TX doorbell, so the far end's handler must not ring
// this model's TX doorbell itself (it may send frames back to it).
func (m *Model) Attach(w wire.Port) {
	m.wireMu.Lock()
	old := m.wire
	m.wire = w
	m.wireMu.Unlock()
	if old != nil && old != w {
		old.SetHandler(nil)
	}
	if w != nil {
		w.SetHandler(m.receive)
	}
	m.dev.Lock()
	m.link.plugged = w != nil
	m.updateLink()
	m.dev.Unlock()
}

// Close detaches the wire and closes the device.
func (m *Model) Close() error {
	return m.dev.Close()
}

// onClose runs after the device was quiesced.
func (m *Model) onClose() {
	m.dev.Lock()
	m.closing = true
	m.ic.stopTimers()
	m.link.stopTimer()
	m.stopWB()
	if m.inj.stallTimer != nil {
		m.inj.stallTimer.Stop()
	}
	m.fifo.clear()
	m.dev.Unlock()
	m.wireMu.Lock()
	w := m.wire
	m.wire = nil
	m.wireMu.Unlock()
	if w != nil {
		w.SetHandler(nil)
	}
}

// resetLocked puts the model's own state back to power-on after the registers were
// reset, and starts the reset's timed phases: CTRL.RST, the EEPROM auto-read (which loads
// the station address and, on the 82599, AUTOC's link mode) and DMA init.
func (m *Model) resetLocked() {
	m.eepromDone, m.dmaDone = false, false
	if m.cfg.Flavor == X82599 {
		m.set(i82599.EEC, m.get(i82599.EEC)&^intelnic.EecAutoRead)
		m.set(i82599.RDRXCTL, m.get(i82599.RDRXCTL)&^i82599.RdrxctlDMAIDone)
		m.set(i82599.AUTOC, m.get(i82599.AUTOC)&^i82599.AutocLMSMask|mediaFor(m.cfg.DeviceID).lms<<i82599.AutocLMSShift)
	} else {
		m.set(i82576.EECD, m.get(i82576.EECD)&^intelnic.EecAutoRead)
	}
	m.stopWB()
	m.secRdyAt = 0
	m.resetQueues()
	m.startReset(m.swReset)
	m.swReset = false
	m.ic.reset()
	m.phy.reset()
	m.fifo.clear()
	for i := range m.txq { // the transmit DMA forgets frames it was gathering
		p := &m.txq[i]
		p.frame, p.bad, p.noFCS = p.frame[:0], false, false
	}
	m.link.reset(m)
}

// get and set are the lock-held register accessors.
func (m *Model) get(off uint32) uint32    { return m.dev.Get(off) }
func (m *Model) set(off, v uint32)        { m.dev.Set(off, v) }
func (m *Model) add(off uint32, n uint32) { m.dev.Set(off, m.dev.Get(off)+n) }

// add64 adds n to a 64-bit counter split over a low and a high register.
func (m *Model) add64(lo, hi uint32, n uint64) {
	v := uint64(m.get(lo)) | uint64(m.get(hi))<<32
	v += n
	m.set(lo, uint32(v))
	m.set(hi, uint32(v>>32))
}

// protocol records a protocol violation by the driver.
func (m *Model) protocol(format string, args ...any) {
	m.dev.Fault(sim.Fault{Kind: sim.Protocol, Msg: fmt.Sprintf(format, args...)})
}
