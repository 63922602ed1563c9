// Package ixgbe is the driver for Intel's 10 GbE controller 82599 (SFP+, backplane and
// CX4 parts; see Match): reset and init in the datasheet's order, link bring-up on the
// EEPROM's link mode, RX/TX queues on the Intel advanced-descriptor rings, RSS, MSI-X and
// legacy INTx interrupts, statistics, and the receive filter (nic.RxFilter: the station
// address and the multicast table). Importing it registers the driver "ixgbe" with
// nic.Register.
package ixgbe

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
)

func init() {
	intel.Register("ixgbe", Match, intel.DeviceIDs(deviceIDs, func(d device) string { return d.name }), facts, Open)
}

// Port is an open 82599 port. It implements nic.Port; its methods forward to the shared
// Intel core it holds.
type Port struct {
	core intel.Port     // BAR0, configuration, queues, vectors, counters: the shared Intel driver
	ts   intel.Timesync // the IEEE 1588 unit: the port implements nic.Timesync
	id   device         // the supported device id: name and media
}

var (
	_ nic.Port     = (*Port)(nil)
	_ nic.RxFilter = (*Port)(nil)
	_ nic.Timesync = (*Port)(nil)
)

// layout is where the 82599 keeps the registers the shared code touches.
var layout = intel.Layout{
	RxQueue: i82599.RDBAL(0),
	TxQueue: i82599.TDBAL(0),
	EIMS:    i82599.EIMS,
	EIMC:    i82599.EIMC,
	IVAR:    i82599.IVAREntry,
	EITR:    i82599.EITR,
	// EITR counts 2.048 µs units in bits 11:3 (0: no moderation); CNT_WDIS keeps a write
	// from resetting the running counter.
	ITR: intel.Moderation{Unit: ITRUnit, Mask: i82599.EitrIntervalMask, Shift: i82599.EitrIntervalShift, Keep: i82599.EitrCntWDis},
	MPC: []uint32{i82599.MPC(0), i82599.MPC(1), i82599.MPC(2), i82599.MPC(3), i82599.MPC(4), i82599.MPC(5), i82599.MPC(6), i82599.MPC(7)},
	// Frames dropped for lack of a descriptor (SRRCTL.DROP_EN) are counted per queue in
	// QPRDC, not in MPC (Linux ixgbe_update_stats reads both).
	QueueDrops: i82599.QPRDC,
	Multicast:  multicastMode,
}

// Open resets and initialises dev, an 82599 function, and starts its queues.
//
// The device is reset first with bus mastering off, so nothing a previous user left
// running can write to memory. In MSI-X mode the port uses one vector per RX queue plus one
// for link changes; the default mode falls back to legacy INTx only when the backend has
// no MSI-X (uio_pci_generic; see IRQKind). Open waits up to cfg.LinkTimeout for the link
// and returns a port with link down after that.
//
// On success the port owns dev and closes it in Close. On failure Open leaves the device
// quiesced (queues disabled, interrupts masked, bus mastering off) and the caller closes
// it.
func Open(dev pci.Device, cfg nic.Config) (*Port, error) {
	d, err := intel.Lookup(dev, "ixgbe", deviceIDs)
	if err != nil {
		return nil, err
	}
	p := &Port{id: d}
	ops := intel.Ops{Mask: p.mask, Stop: p.stopRx, Link: p.readLink, UnmaskINTx: p.unmaskINTx, MaskINTx: p.maskINTx, Release: func() { intel.HandBack(p.bar()) }}
	if err := intel.Attach(&p.core, dev, cfg, limits, layout, ops); err != nil {
		return nil, err
	}
	if err := p.bringUp(); err != nil {
		return nil, intel.Abort(&p.core, err)
	}
	intel.InitTimesync(&p.ts, &p.core, i82599.Timesync, i82599.TimincaFor)
	return p, nil
}

// bringUp is the 82599's initialisation in the order of the datasheet's section 4.6.3
// (Initialization Sequence), each step named by its section. intel.Attach has mapped
// BAR0 with bus mastering off; Open calls intel.Abort if a step fails.
func (p *Port) bringUp() error {
	// 4.6.3.1, 4.6.3.2: interrupts masked, global reset, interrupts masked again; 4.6.3:
	// the EEPROM auto-read and the DMA init done; the device taken from the firmware.
	if err := p.resetHW(); err != nil {
		return err
	}
	// 4.6.4: link setup in the EEPROM's link mode, auto-negotiation restarted.
	if err := p.setupLink(); err != nil {
		return err
	}
	// 4.6.5: the read-to-clear statistics read once, so that the totals start from zero.
	intel.ReadCounters(&p.core)
	// The station address, from receive address 0.
	if err := intel.ReadMAC(&p.core); err != nil {
		return err
	}
	// The rings and mempools in memory, then bus mastering on.
	if err := intel.AllocQueues(&p.core); err != nil {
		return err
	}
	if err := intel.EnableBusMaster(&p.core); err != nil {
		return err
	}
	// 4.6.7: receive init, the queues enabled and their rings filled; RXEN still off.
	if err := p.initRx(); err != nil {
		return err
	}
	// 4.6.8: transmit init, the queues enabled.
	if err := p.initTx(); err != nil {
		return err
	}
	// 4.6.3.1: the interrupt vectors, then their causes (link change unmasked).
	kind, ok, err := intel.EnableVectors(&p.core)
	if err != nil {
		return err
	}
	if ok {
		p.setupInterrupts(kind)
	}
	// 4.6.7, last step: RXCTRL.RXEN, with the security path halted.
	p.enableRx()
	// 4.6.4: the link, waited for up to cfg.LinkTimeout; down after that is no error.
	intel.WaitLink(&p.core)
	return nil
}

// bar is BAR0, as intel.Attach mapped it.
func (p *Port) bar() pci.Region { return intel.BAR(&p.core) }

// cfg is the configuration, as intel.Attach completed it.
func (p *Port) cfg() nic.Config { return intel.Config(&p.core) }

// mask masks every interrupt cause: EIMC with all ones (IXGBE_IRQ_CLEAR_MASK, as Linux's
// ixgbe_stop_adapter_generic writes it) and the extended queue masks of MSI-X mode
// (EIMC_EX, as ixgbe_irq_disable clears them).
func (p *Port) mask() {
	p.bar().Write32(i82599.EIMC, intelnic.AllCauses)
	p.bar().Write32(i82599.EIMCEx(0), intelnic.AllCauses)
	p.bar().Write32(i82599.EIMCEx(1), intelnic.AllCauses)
}

// stopRx disables receive before the queues are stopped.
func (p *Port) stopRx() {
	p.bar().Write32(i82599.RXCTRL, p.bar().Read32(i82599.RXCTRL)&^i82599.RxctrlRXEN)
}
