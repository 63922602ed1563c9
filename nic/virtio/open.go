package virtio

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/uiod/uiod/internal/hw/pcispec"
	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/vectors"
	"github.com/uiod/uiod/pci"
)

// maxRing is the most packets a queue takes: 32768 descriptors, two per packet.
const maxRing = 16384

// MaxQueuePairs is the most queue pairs the driver uses (each RX queue is polled by one
// thread, as a NIC's RSS queues); the device may offer fewer, which Open checks.
const MaxQueuePairs = 16

// Open brings up a virtio-net device with default options.
func Open(dev pci.Device, cfg nic.Config) (*Port, error) { return OpenWith(dev, cfg, Options{}) }

// OpenWith brings up a virtio-net device: reset, feature negotiation, queues, interrupts,
// DRIVER_OK, the number of queue pairs, then it waits up to cfg.LinkTimeout for the link.
// On failure the device is left reset with bus mastering off. Errors name the device.
func OpenWith(dev pci.Device, cfg nic.Config, opt Options) (*Port, error) {
	p, err := open(dev, cfg, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: virtio: %w", dev.Addr(), err)
	}
	return p, nil
}

func open(dev pci.Device, cfg nic.Config, opt Options) (*Port, error) {
	if !hostLittleEndian {
		return nil, fmt.Errorf("big-endian host: %w", pci.ErrNotSupported)
	}
	vendor, device, err := pci.ReadIDs(dev.Config())
	if err != nil {
		return nil, err
	}
	if !Match(vendor, device) {
		return nil, fmt.Errorf("%04x:%04x is not a virtio-net function: %w", vendor, device, nic.ErrNoDriver)
	}
	space := make([]byte, pcispec.ConfigLen)
	n, err := dev.Config().ReadAt(space, 0)
	if n < pcispec.HeaderLen {
		return nil, fmt.Errorf("read config space: %d bytes: %w", n, err)
	}
	space = space[:n]
	caps, err := parseCapabilities(space)
	if errors.Is(err, errNoModern) && device == virtiospec.DeviceIDNetTransitional {
		return nil, fmt.Errorf("transitional virtio-net %04x:%04x offers only the legacy (virtio 0.9.5, I/O BAR) interface: "+
			"only the modern virtio 1.x transport is supported (QEMU: leave disable-modern off): %w: %w", vendor, device, err, pci.ErrNotSupported)
	}
	if err != nil {
		return nil, err
	}
	t, err := newTransport(dev, caps)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	p := &Port{dev: dev, t: t, cfg: cfg, opt: opt}
	if err := pci.SetBusMaster(dev.Config(), false); err != nil {
		return nil, err
	}
	if err := t.reset(); err != nil {
		return nil, err
	}
	if err := p.start(opt); err != nil {
		p.abort()
		return nil, err
	}
	return p, nil
}

// has reports whether feature bit f was negotiated.
func (p *Port) has(f int) bool { return p.features&(1<<f) != 0 }

// negotiate runs ACKNOWLEDGE → DRIVER → features → FEATURES_OK.
func (p *Port) negotiate(opt Options) error {
	t := p.t
	t.addStatus(virtiospec.StatusAcknowledge)
	t.addStatus(virtiospec.StatusDriver)
	offered := t.deviceFeatures()
	if offered&(1<<virtiospec.FeatVersion1) == 0 {
		return fmt.Errorf("device offers features %#x without VERSION_1 (legacy only): %w", offered, pci.ErrNotSupported)
	}
	if offered&(1<<virtiospec.FeatAccessPlat) == 0 && !pci.PhysicalAddresses(p.dev.DMA()) {
		return fmt.Errorf("device does not offer VIRTIO_F_ACCESS_PLATFORM, so it bypasses the IOMMU and needs physical "+
			"addresses, but this backend hands out IOVAs that an IOMMU translates (vfio type1 or iommufd): the device "+
			"would DMA to the wrong memory; give it iommu_platform=on (QEMU: -device virtio-net-pci,iommu_platform=on,... "+
			"with a vIOMMU), or drive it without translation (vfio no-IOMMU mode, or uio_pci_generic): %w", pci.ErrNotSupported)
	}
	want := uint64(1)<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatAccessPlat | 1<<virtiospec.FeatMAC | 1<<virtiospec.FeatStatus | 1<<virtiospec.FeatSpeedDuplex
	if platformOrdered {
		want |= 1 << virtiospec.FeatOrderPlat
	}
	if offered&(1<<virtiospec.FeatCtrlVQ) != 0 {
		// The receive filter's commands too (SetMulticast, SetMAC), used only when the
		// port's user sets the filter.
		want |= 1<<virtiospec.FeatCtrlVQ | 1<<virtiospec.FeatMQ | 1<<virtiospec.FeatCtrlRX | 1<<virtiospec.FeatCtrlMACAddr
	}
	if !opt.NoEventIdx {
		want |= 1 << virtiospec.FeatEventIdx
	}
	mtu, err := p.mtuFeature(offered)
	if err != nil {
		return err
	}
	p.features = offered&want | mtu
	t.setDriverFeatures(p.features)
	t.addStatus(virtiospec.StatusFeaturesOK)
	if s := t.status(); s&virtiospec.StatusFeaturesOK == 0 {
		return fmt.Errorf("device refused features %#x (status 0x%02x)", p.features, s)
	}
	return nil
}

// readConfig reads the MAC and the number of queue pairs the device supports, after
// checking that the device configuration holds the fields the features negotiated say
// are there.
func (p *Port) readConfig() error {
	d := p.t.device
	for _, f := range [...]struct {
		feat      int
		name      string
		off, size uint32
	}{
		{virtiospec.FeatMAC, "mac", virtiospec.NetCfgMAC, 6},
		{virtiospec.FeatStatus, "status", virtiospec.NetCfgStatus, 2},
		{virtiospec.FeatMQ, "max_virtqueue_pairs", virtiospec.NetCfgMaxPairs, 2},
	} {
		if p.has(f.feat) && !d.fits(f.off, f.size) {
			return fmt.Errorf("device configuration of %d bytes has no %s (bytes %d..%d), which its features promise", d.len, f.name, f.off, f.off+f.size-1)
		}
	}
	mac := make(net.HardwareAddr, 6)
	pairs := 1
	err := p.t.readDeviceConfig(func() {
		if p.has(virtiospec.FeatMAC) {
			for i := range mac {
				mac[i] = d.r8(virtiospec.NetCfgMAC + uint32(i))
			}
		}
		if p.has(virtiospec.FeatMQ) {
			pairs = int(d.r16(virtiospec.NetCfgMaxPairs))
		}
	})
	if err != nil {
		return err
	}
	if !p.has(virtiospec.FeatMAC) {
		// No address from the device: a random locally administered unicast one.
		if _, err := rand.Read(mac); err != nil {
			return fmt.Errorf("random mac: %w", err)
		}
		mac[0] = mac[0]&^1 | 2
	}
	if pairs < 1 || pairs > 0x8000 {
		return fmt.Errorf("device config: max_virtqueue_pairs %d", pairs)
	}
	// Queue 2n is receive queue n, 2n+1 transmit queue n, and the control queue follows
	// the last pair the device has.
	need := 2 * pairs
	if p.has(virtiospec.FeatCtrlVQ) {
		need++
	}
	if n := int(p.t.common.r16(virtiospec.ComNumQueues)); n < need {
		return fmt.Errorf("device has %d virtqueues (num_queues), but %d queue pairs%s need %d", n, pairs, ctrlNote(p.has(virtiospec.FeatCtrlVQ)), need)
	}
	p.mac.Store(&mac)
	p.maxPairs = pairs
	return nil
}

func ctrlNote(ctrl bool) string {
	if ctrl {
		return " and the control queue"
	}
	return ""
}

// start runs the bring-up after reset: features and configuration, the checks of the
// port's configuration against them, vectors, the queues, then the device running.
func (p *Port) start(opt Options) error {
	if err := p.negotiate(opt); err != nil {
		return err
	}
	if err := p.readConfig(); err != nil {
		return err
	}
	if err := p.checkConfig(); err != nil {
		return err
	}
	if err := p.enableVectors(p.cfg.RxQueues); err != nil {
		return err
	}
	if p.msix() {
		if err := p.setConfigVector(); err != nil {
			return err
		}
	}
	if err := p.newQueues(); err != nil {
		return err
	}
	return p.goLive()
}

// checkConfig checks the port's configuration against what the device offers: queue
// pairs (and multi-queue), ring sizes, and buffers that hold a whole frame.
func (p *Port) checkConfig() error {
	cfg := p.cfg
	if err := cfg.Validate(nic.Limits{Queues: p.maxPairs, Ring: maxRing, MaxMTU: MaxMTU}); err != nil {
		return err
	}
	if cfg.TxQueues > cfg.RxQueues {
		return fmt.Errorf("tx queues %d: more than rx queues (%d), but the device receives on every queue pair in use", cfg.TxQueues, cfg.RxQueues)
	}
	if cfg.BufSize < maxFrame {
		return fmt.Errorf("buffer size %d: a %d-byte frame must fit one buffer (mergeable receive buffers are not used)", cfg.BufSize, maxFrame)
	}
	if pairs := cfg.RxQueues; pairs > 1 && !p.has(virtiospec.FeatMQ) {
		return fmt.Errorf("%d queue pairs: device has no multi-queue: %w", pairs, pci.ErrNotSupported)
	}
	return nil
}

// newQueues allocates and programs the RX queues with their pools (filled), the TX
// queues with their copy pools, and the control queue when the device has one.
func (p *Port) newQueues() error {
	cfg, t, dma := p.cfg, p.t, p.dev.DMA()
	msix, eventIdx := p.msix(), p.has(virtiospec.FeatEventIdx)
	for i := 0; i < cfg.RxQueues; i++ {
		q, err := newVQ(t, dma, uint16(2*i), 2*cfg.RxRing, p.rxVector(i), msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, q.ring.mem)
		pool, err := nic.NewMempool(dma, cfg.PoolSize, cfg.BufSize)
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", i, err)
		}
		p.pools = append(p.pools, pool)
		rq := newRxQueue(q, pool, cfg.BufSize, cfg.MTU)
		rq.fill()
		p.rx = append(p.rx, rq)
	}
	for i := 0; i < cfg.TxQueues; i++ {
		q, err := newVQ(t, dma, uint16(2*i+1), 2*cfg.TxRing, virtiospec.NoVector, msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, q.ring.mem)
		copies, err := nic.NewMempool(dma, q.ring.size()/2, cfg.BufSize)
		if err != nil {
			return fmt.Errorf("tx queue %d: %w", i, err)
		}
		p.pools = append(p.pools, copies)
		p.tx = append(p.tx, newTxQueue(q, dma, copies, cfg.MTU))
	}
	if p.has(virtiospec.FeatCtrlVQ) {
		c, err := newCtrlQueue(t, dma, uint16(2*p.maxPairs), msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, c.ring.mem, c.buf)
		p.ctrl = c
	}
	return nil
}

// goLive turns bus mastering on, runs the device, watches its configuration changes and
// waits up to the link timeout for the link.
func (p *Port) goLive() error {
	if err := pci.SetBusMaster(p.dev.Config(), true); err != nil {
		return err
	}
	if err := p.run(); err != nil {
		return err
	}
	if cv := p.configVector(); cv != nil {
		w, err := vectors.Watch(cv, func() { p.configChanged(true) })
		if err == nil {
			p.watch = w
		}
	}
	deadline := time.Now().Add(p.cfg.LinkTimeout)
	for !p.Link().Up && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// program sets up every queue again on its ring after a reset and renegotiation (the
// recovery from DEVICE_NEEDS_RESET), then runs the device.
func (p *Port) program() error {
	msix := p.msix()
	if msix {
		if err := p.setConfigVector(); err != nil {
			return err
		}
	}
	for _, q := range p.rx {
		if err := q.program(msix); err != nil {
			return err
		}
	}
	for _, q := range p.tx {
		if err := q.program(msix); err != nil {
			return err
		}
	}
	if p.ctrl != nil {
		if err := p.ctrl.program(msix); err != nil {
			return err
		}
	}
	return p.run()
}

// run sets DRIVER_OK on a device whose queues are set up, sets the number of queue pairs
// and notifies the receive queues of their buffers.
func (p *Port) run() error {
	t := p.t
	t.addStatus(virtiospec.StatusDriverOK)
	if s := t.status(); s&(virtiospec.StatusFailed|virtiospec.StatusNeedsReset) != 0 || s&virtiospec.StatusDriverOK == 0 {
		return fmt.Errorf("device status 0x%02x after DRIVER_OK", s)
	}
	if len(p.rx) > 1 {
		if err := p.ctrl.setPairs(len(p.rx)); err != nil {
			return err
		}
	}
	for _, q := range p.rx {
		q.t.notifyQueue(q.notifyOff, q.index)
	}
	return nil
}

// abort quiesces the device after a failed open: reset (the device lets go of every
// queue), vectors off, bus mastering off, memory freed.
func (p *Port) abort() {
	p.t.addStatus(virtiospec.StatusFailed) // the driver gives up on the device
	p.t.reset()
	if p.watch != nil {
		p.watch.Stop()
	}
	pci.SetBusMaster(p.dev.Config(), false)
	p.irqs.Disable(p.dev)
	p.releaseBuffers()
	dma := p.dev.DMA()
	for _, pool := range p.pools {
		pool.Close()
	}
	for _, m := range p.rings {
		dma.Free(m)
	}
}

func (p *Port) releaseBuffers() {
	for _, q := range p.rx {
		q.release()
	}
	for _, q := range p.tx {
		q.reclaim()
		q.release()
	}
}
