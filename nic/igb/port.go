// Package igb is the driver for Intel's 1 GbE controller 82576 (QEMU's igb): reset and
// init, PHY auto-negotiation through MDIC, RX/TX queues on the Intel advanced-descriptor
// rings, RSS, MSI-X and legacy INTx interrupts, statistics, and the receive filter
// (nic.RxFilter: the station address and the multicast table). Importing it registers
// the driver "igb" with nic.Register.
package igb

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
)

func init() {
	intel.Register("igb", Match, intel.DeviceIDs(deviceIDs, func(name string) string { return name }), facts, Open)
}

// Port is an open 82576 port. It implements nic.Port; its methods forward to the shared
// Intel core it holds.
type Port struct {
	core      intel.Port     // BAR0, configuration, queues, vectors, counters: the shared Intel driver
	ts        intel.Timesync // the IEEE 1588 unit: the port implements nic.Timesync
	other     int            // MSI-X vector of link changes
	media     media          // copper PHY or SerDes, from CTRL_EXT's link mode
	forcedPCS bool           // SerDes without PCS auto-negotiation (1000BASE-KX)
}

var (
	_ nic.Port     = (*Port)(nil)
	_ nic.RxFilter = (*Port)(nil)
	_ nic.Timesync = (*Port)(nil)
)

// layout is where the 82576 keeps the registers the shared code touches.
var layout = intel.Layout{
	RxQueue: i82576.RDBAL(0),
	TxQueue: i82576.TDBAL(0),
	EIMS:    i82576.EIMS,
	EIMC:    i82576.EIMC,
	IVAR:    i82576.IVAREntry,
	EITR:    i82576.EITR,
	// EITR counts 1 µs units in bits 14:2 (0: no moderation); CNT_IGNR keeps a write from
	// resetting the running counter.
	ITR: intel.Moderation{Unit: ITRUnit, Mask: i82576.EitrIntervalMask, Shift: i82576.EitrIntervalShift, Keep: i82576.EitrCntIgnr},
	MPC: []uint32{i82576.MPC},
	// Frames dropped for lack of a descriptor (SRRCTL.DROP_EN) are counted per queue in
	// RQDPC (Linux igb_update_stats).
	QueueDrops: i82576.RQDPC,
	Multicast:  multicastMode,
}

// Open resets and initialises dev, an 82576 function, powers its link up and brings it
// up (copper: PHY auto-negotiation; SerDes: the PCS) and starts the queues.
//
// The device is reset first with bus mastering off. In MSI-X mode the port uses one
// vector per RX queue plus one for link changes; the default mode falls back to legacy
// INTx only when the backend has no MSI-X (uio_pci_generic; see IRQKind). Open waits up to
// cfg.LinkTimeout for auto-negotiation and returns a port with link down after that.
//
// On success the port owns dev and closes it in Close. On failure Open leaves the device
// quiesced and the caller closes it.
func Open(dev pci.Device, cfg nic.Config) (*Port, error) {
	if _, err := intel.Lookup(dev, "igb", deviceIDs); err != nil {
		return nil, err
	}
	p := &Port{}
	ops := intel.Ops{Mask: p.mask, Stop: p.stopRxTx, Link: p.readLink, UnmaskINTx: p.unmaskINTx, MaskINTx: p.maskINTx, Release: func() { intel.HandBack(p.bar()) }}
	if err := intel.Attach(&p.core, dev, cfg, limits, layout, ops); err != nil {
		return nil, err
	}
	if err := p.bringUp(); err != nil {
		return nil, intel.Abort(&p.core, err)
	}
	intel.InitTimesync(&p.ts, &p.core, i82576.Timesync, func(int) (uint32, uint) { return i82576.Timinca, i82576.TimincaShift })
	return p, nil
}

// bringUp is the 82576's initialisation in the order of the datasheet's section 4.5
// (Software Initialization), each step named by its section where the datasheet has
// one. intel.Attach has mapped BAR0 with bus mastering off; Open calls intel.Abort if a
// step fails.
func (p *Port) bringUp() error {
	// 4.5: interrupts masked, receive and transmit stopped, global reset, interrupts
	// masked again, the NVM auto-read; the device taken from the firmware.
	if err := p.resetHW(); err != nil {
		return err
	}
	// The station address, from receive address 0.
	if err := intel.ReadMAC(&p.core); err != nil {
		return err
	}
	// Link setup: the media from CTRL_EXT's link mode, the PHY or the PCS powered up,
	// auto-negotiation started (or the PCS forced).
	if err := p.readMedia(); err != nil {
		return err
	}
	if err := p.powerUpLink(); err != nil {
		return err
	}
	if err := p.startLink(); err != nil {
		return err
	}
	// The read-to-clear statistics read once, so that the totals start from zero.
	intel.ReadCounters(&p.core)
	// The rings and mempools in memory, then bus mastering on.
	if err := intel.AllocQueues(&p.core); err != nil {
		return err
	}
	if err := intel.EnableBusMaster(&p.core); err != nil {
		return err
	}
	// Every queue the reset left enabled turned off before its ring is programmed.
	if err := p.disableQueues(); err != nil {
		return err
	}
	// 4.5.9: receive init, the queues enabled, receive on and the rings filled.
	if err := p.initRx(); err != nil {
		return err
	}
	// 4.5.10: transmit init, the queues enabled, transmit on.
	if err := p.initTx(); err != nil {
		return err
	}
	// The interrupt vectors, then their causes (link change unmasked).
	kind, ok, err := intel.EnableVectors(&p.core)
	if err != nil {
		return err
	}
	if ok {
		p.setupInterrupts(kind)
	}
	// The link, waited for up to cfg.LinkTimeout; down after that is no error.
	intel.WaitLink(&p.core)
	return nil
}

// bar is BAR0, as intel.Attach mapped it.
func (p *Port) bar() pci.Region { return intel.BAR(&p.core) }

// cfg is the configuration, as intel.Attach completed it.
func (p *Port) cfg() nic.Config { return intel.Config(&p.core) }

// mask masks every interrupt cause, legacy and extended.
func (p *Port) mask() {
	p.bar().Write32(i82576.IMC, intelnic.AllCauses)
	p.bar().Write32(i82576.EIMC, intelnic.AllCauses)
}

// stopRxTx disables receive and transmit before the queues are stopped.
func (p *Port) stopRxTx() {
	r := p.bar()
	r.Write32(i82576.RCTL, r.Read32(i82576.RCTL)&^i82576.RctlEN)
	r.Write32(i82576.TCTL, r.Read32(i82576.TCTL)&^i82576.TctlEN)
}
