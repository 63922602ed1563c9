// Package virtio models a virtio-net device on the modern (virtio 1.x) PCI transport on
// the sim device-model core, so that the driver in nic/virtio runs against it without a
// hypervisor or privileges.
//
// The model implements the four virtio structures (common, notify, ISR and device
// configuration) in BAR4 at the offsets QEMU uses, the vendor capabilities that point at
// them, feature negotiation (VERSION_1 required; ACCESS_PLATFORM required when offered,
// and without it the device bypasses the IOMMU: Config.NoAccessPlatform), split virtqueues
// read and written through the IOMMU, event suppression (flags, or used_event and
// avail_event with EVENT_IDX), MSI-X with a vector per queue and one for configuration
// changes, INTx with the read-to-clear ISR register, multi-queue with the control queue's
// VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, the receive filter of QEMU's virtio-net (promiscuous
// after reset; VIRTIO_NET_CTRL_RX promiscuous and all-multicast, the 64-entry
// VIRTIO_NET_CTRL_MAC table and MAC_ADDR_SET, each with its feature), link status with configuration-change interrupts, and
// fault injection.
//
// It is strict about the spec's ordering rules: feature bits may only change before
// FEATURES_OK, no queue register may be touched before FEATURES_OK, no notification may
// come before DRIVER_OK, status bits are set in order, and with EVENT_IDX the driver's
// ring flags must stay 0. As strict as QEMU: a frame that finds the receive ring empty is
// held (with every frame after it) until the driver notifies that receive queue, so a
// driver that posts buffers without the notification the device asked for loses its
// traffic; a zero-length descriptor breaks the device (DEVICE_NEEDS_RESET, as QEMU's
// virtio_error), which then processes no queue until the driver resets it; and
// RaiseNeedsReset breaks it on demand. The model itself reads the available index before the entries
// below it and the descriptors they name, and stores the used entry before the used
// index. In strict mode each violation is a fault that fails the test (Device().Err()).
//
// A Model is a sim.Model: PCI is the function a driver opens, Device the model core
// under it; NewPair builds two functions on one IOMMU.
package virtio

import (
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Config describes the modelled device.
type Config struct {
	Addr pci.Addr
	// Wire is the cable; nil leaves the port unplugged (frames sent are lost).
	Wire wire.Port
	// MAC is the station address (default 52:54:00:12:34:56, QEMU's).
	MAC net.HardwareAddr
	// MaxPairs is the number of queue pairs offered (default 4; 1 offers no MQ).
	MaxPairs int
	// QueueSize is the largest (and initial) virtqueue size (default 256, QEMU's).
	QueueSize int
	// NoEventIdx does not offer VIRTIO_F_EVENT_IDX.
	NoEventIdx bool
	// NoMSIX makes IRQs(MSIX) fail with pci.ErrNotSupported, as under uio_pci_generic.
	NoMSIX bool
	// MSIXVectors is the MSI-X table size (default one vector per virtqueue and one for
	// configuration changes); fewer make a driver share vectors.
	MSIXVectors int
	// NoAccessPlatform does not offer VIRTIO_F_ACCESS_PLATFORM: the device then bypasses
	// the IOMMU and takes bus addresses for physical addresses, so its DMA works only in
	// an address space of physical addresses (sim.NewPhysicalIOMMU, as uio and VFIO
	// no-IOMMU give); behind a translating one every access is a DMA fault.
	NoAccessPlatform bool
	// OrderPlatform offers VIRTIO_F_ORDER_PLATFORM (a hardware device's memory ordering).
	OrderPlatform bool
	// NumQueues is the num_queues the device reports (default the virtqueues it has,
	// 2·MaxPairs + 1); a smaller one models a device that offers fewer queues than its
	// max_virtqueue_pairs implies.
	NumQueues int
	// MTU, when not 0, offers VIRTIO_NET_F_MTU with this mtu in the device configuration.
	// A driver that accepts it must post receive buffers that hold a frame of it
	// (MTU+14 bytes, 4 more tagged, after the net header): one it posts smaller for a
	// frame within the mtu is a fault, the frame left undelivered. Without the feature
	// negotiated the device delivers frames of a 1500-byte MTU only; a longer frame is
	// never delivered (counted Oversize).
	MTU int
	// NoCtrlRX does not offer VIRTIO_NET_F_CTRL_RX (the RX mode and filter table
	// commands): the device stays promiscuous. NoCtrlMACAddr does not offer
	// VIRTIO_NET_F_CTRL_MAC_ADDR (the station address command).
	NoCtrlRX, NoCtrlMACAddr bool
	// SpeedMbps is the speed in the device configuration (0: unknown).
	SpeedMbps int
	// Steer picks the queue pair for a received frame among pairs (default: a hash of
	// the IPv4 addresses and ports, so one flow stays on one queue).
	Steer func(frame []byte, pairs int) int
	// IOMMU is a shared DMA address space, or nil for the device's own.
	IOMMU *sim.IOMMU
	// Strict makes protocol violations and DMA faults errors (Device().Err()).
	Strict bool
	Log    *zap.Logger
}

// defaultMAC is the station address of a model whose Config has none: QEMU's.
var defaultMAC = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// Model is a modelled virtio-net function (a sim.Model). PCI is what a driver opens.
type Model struct {
	cfg   Config
	dev   *sim.Device
	pci   *device
	nq    int // virtqueues: 2·MaxPairs + the control queue
	wire  wire.Port
	txMu  []sync.Mutex // serialises the transmit work of each queue
	txBuf [][]byte     // per queue: the frame being gathered

	// Everything below is guarded by the device lock.
	offered     uint64
	devFeatSel  uint32
	drvFeatSel  uint32
	drvFeatures uint64
	status      uint8
	generation  uint8
	msixConfig  uint16
	queueSel    uint16
	queues      []queue
	numQueues   int
	isr         uint8
	link        bool
	pairs       int
	rxf         rxFilter // the receive filter (filter.go)
	netcfg      [virtiospec.NetCfgLen]byte
	inj         injections
	st          Stats
	flap        *time.Timer
}

// New returns a device at its reset state, link up.
func New(cfg Config) (*Model, error) {
	if cfg.MAC == nil {
		cfg.MAC = append(net.HardwareAddr(nil), defaultMAC...)
	}
	if len(cfg.MAC) != 6 {
		return nil, fmt.Errorf("sim virtio: mac %v: want 6 bytes", cfg.MAC)
	}
	if cfg.MaxPairs == 0 {
		cfg.MaxPairs = 4
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 256
	}
	if cfg.MaxPairs < 1 || cfg.MaxPairs > 256 {
		return nil, fmt.Errorf("sim virtio: %d queue pairs: want 1..256", cfg.MaxPairs)
	}
	if cfg.QueueSize < 2 || cfg.QueueSize > 32768 || cfg.QueueSize&(cfg.QueueSize-1) != 0 {
		return nil, fmt.Errorf("sim virtio: queue size %d: want a power of two in 2..32768", cfg.QueueSize)
	}
	if cfg.MTU != 0 && (cfg.MTU < 68 || cfg.MTU > 65535) {
		return nil, fmt.Errorf("sim virtio: mtu %d: want 68..65535", cfg.MTU)
	}
	if cfg.Steer == nil {
		cfg.Steer = steerByFlow
	}
	m := &Model{cfg: cfg, nq: 2*cfg.MaxPairs + 1, link: true, wire: cfg.Wire}
	m.txMu = make([]sync.Mutex, m.nq)
	m.txBuf = make([][]byte, m.nq)
	m.offered = 1<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatMAC | 1<<virtiospec.FeatStatus | 1<<virtiospec.FeatCtrlVQ | 1<<virtiospec.FeatSpeedDuplex
	if cfg.MTU != 0 {
		m.offered |= 1 << virtiospec.FeatMTU
	}
	if cfg.OrderPlatform {
		m.offered |= 1 << virtiospec.FeatOrderPlat
	}
	if !cfg.NoAccessPlatform {
		m.offered |= 1 << virtiospec.FeatAccessPlat
	}
	m.numQueues = m.nq
	if cfg.NumQueues > 0 && cfg.NumQueues < m.nq {
		m.numQueues = cfg.NumQueues
	}
	msixVectors := m.nq + 1
	if cfg.MSIXVectors > 0 {
		msixVectors = cfg.MSIXVectors
	}
	if cfg.MaxPairs > 1 {
		m.offered |= 1 << virtiospec.FeatMQ
	}
	if !cfg.NoCtrlRX {
		m.offered |= 1 << virtiospec.FeatCtrlRX
	}
	if !cfg.NoCtrlMACAddr {
		m.offered |= 1 << virtiospec.FeatCtrlMACAddr
	}
	if !cfg.NoEventIdx {
		m.offered |= 1 << virtiospec.FeatEventIdx
	}
	dev, err := sim.New(sim.Config{
		Addr:        cfg.Addr,
		VendorID:    virtiospec.VendorID,
		DeviceID:    virtiospec.DeviceIDNet,
		Revision:    1,
		Class:       uint32(pci.ClassNetwork),
		BAR0Size:    4,
		MSIXVectors: msixVectors,
		IOMMU:       cfg.IOMMU,
		Strict:      cfg.Strict,
		Log:         cfg.Log,
		OnReset:     func() { m.reset(); m.st.Resets++ },
		OnClose:     m.onClose,
	})
	if err != nil {
		return nil, err
	}
	m.dev = dev
	m.pci = &device{Device: dev, m: m}
	m.queues = make([]queue, m.nq)
	m.reset()
	m.initNetConfig()
	if m.wire != nil {
		m.wire.SetHandler(m.receive)
	}
	return m, nil
}

var _ sim.Model = (*Model)(nil)

// Close closes the device (as the driver's Close does; calling both is safe).
func (m *Model) Close() error { return m.dev.Close() }

// PCI is the function as a pci.Device, for the driver to open.
func (m *Model) PCI() pci.Device { return m.pci }

// Device is the device-model core under PCI: faults, IOMMU, strict error.
func (m *Model) Device() *sim.Device { return m.dev }

// MAC is the modelled station address.
func (m *Model) MAC() net.HardwareAddr { return m.cfg.MAC }

// Pairs is the number of queue pairs the driver set (1 after reset).
func (m *Model) Pairs() int {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.pairs
}

// Features are the feature bits the driver accepted.
func (m *Model) Features() uint64 {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.drvFeatures
}

// Counters implements sim.Model: TooLong counts frames longer than the device's MTU or
// the available buffer, Refused frames that arrived with receive off and unusable receive chains.
func (m *Model) Counters() sim.Counters {
	s := m.Stats()
	return sim.Counters{
		WireOut: s.WireOut, WireLost: s.WireLost, RxFrames: s.RxFrames, Missed: s.Missed,
		TooLong: s.Oversize, Refused: s.RxOff + s.RxErrors, Dropped: s.Dropped,
		TxErrors: s.TxErrors + s.TxLinkDown,
	}
}

// Stats returns a snapshot of the model's counters.
func (m *Model) Stats() Stats {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.st
}

// reset returns the transport to its reset state. The lock is held.
func (m *Model) reset() {
	m.status, m.drvFeatures, m.devFeatSel, m.drvFeatSel, m.queueSel = 0, 0, 0, 0, 0
	m.msixConfig = virtiospec.NoVector
	m.isr = 0
	m.pairs = 1
	m.resetFilter()
	for i := range m.queues {
		m.queues[i] = queue{size: uint16(m.cfg.QueueSize), msix: virtiospec.NoVector}
	}
	m.dev.SetINTx(false)
}

func (m *Model) onClose() {
	m.dev.Lock()
	if m.flap != nil {
		m.flap.Stop()
	}
	m.dev.Unlock()
}

// fault records a protocol violation. The lock is held.
func (m *Model) fault(format string, args ...any) {
	m.dev.Fault(sim.Fault{Kind: sim.Protocol, Msg: fmt.Sprintf(format, args...)})
}

// has reports whether the driver accepted feature f. The lock is held.
func (m *Model) has(f int) bool { return m.drvFeatures&(1<<f) != 0 }

// running reports whether the driver finished initialisation and may use the queues.
func (m *Model) running() bool {
	return m.status&virtiospec.StatusDriverOK != 0 && m.status&(virtiospec.StatusFailed|virtiospec.StatusNeedsReset) == 0 && !m.dev.Closed()
}

// irqs is the pci.Device IRQs with the NoMSIX option.
func (m *Model) irqs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind == irq.MSIX && m.cfg.NoMSIX && n > 0 {
		return nil, fmt.Errorf("sim virtio: msix: %w", pci.ErrNotSupported)
	}
	return m.dev.IRQs(kind, n)
}
