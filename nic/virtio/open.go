package virtio

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/vectors"
	"github.com/uiod/uiod/pci"
)

// maxRing is the most packets a queue takes: 32768 descriptors, two per packet.
const maxRing = 16384

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
	space := make([]byte, 256)
	n, err := dev.Config().ReadAt(space, 0)
	if n < 0x40 {
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
	p := &Port{dev: dev, t: t, cfg: cfg}
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
	want := uint64(1)<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatAccessPlat | 1<<virtiospec.FeatMAC | 1<<virtiospec.FeatStatus | 1<<virtiospec.FeatSpeedDuplex
	if offered&(1<<virtiospec.FeatCtrlVQ) != 0 {
		want |= 1<<virtiospec.FeatCtrlVQ | 1<<virtiospec.FeatMQ
	}
	if !opt.NoEventIdx {
		want |= 1 << virtiospec.FeatEventIdx
	}
	p.features = offered & want
	t.setDriverFeatures(p.features)
	t.addStatus(virtiospec.StatusFeaturesOK)
	if s := t.status(); s&virtiospec.StatusFeaturesOK == 0 {
		return fmt.Errorf("device refused features %#x (status 0x%02x)", p.features, s)
	}
	return nil
}

// readConfig reads the MAC and the number of queue pairs the device supports.
func (p *Port) readConfig() error {
	d := p.t.device
	mac := make(net.HardwareAddr, 6)
	pairs := 1
	p.t.readDeviceConfig(func() {
		if p.has(virtiospec.FeatMAC) {
			for i := range mac {
				mac[i] = d.r8(virtiospec.NetCfgMAC + uint32(i))
			}
		}
		if p.has(virtiospec.FeatMQ) {
			pairs = int(d.r16(virtiospec.NetCfgMaxPairs))
		}
	})
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
	p.mac, p.maxPairs = mac, pairs
	return nil
}

// start runs the bring-up after reset.
func (p *Port) start(opt Options) error {
	if err := p.negotiate(opt); err != nil {
		return err
	}
	if err := p.readConfig(); err != nil {
		return err
	}
	cfg := p.cfg
	if err := cfg.Validate(nic.Limits{Queues: p.maxPairs, Ring: maxRing}); err != nil {
		return err
	}
	if cfg.TxQueues > cfg.RxQueues {
		return fmt.Errorf("tx queues %d: more than rx queues (%d), but the device receives on every queue pair in use", cfg.TxQueues, cfg.RxQueues)
	}
	if cfg.BufSize < maxFrame {
		return fmt.Errorf("buffer size %d: a %d-byte frame must fit one buffer (mergeable receive buffers are not used)", cfg.BufSize, maxFrame)
	}
	pairs := cfg.RxQueues
	if pairs > 1 && !p.has(virtiospec.FeatMQ) {
		return fmt.Errorf("%d queue pairs: device has no multi-queue: %w", pairs, pci.ErrNotSupported)
	}
	if err := p.enableVectors(pairs); err != nil {
		return err
	}
	msix := p.irqs.Other() != nil
	t, dma := p.t, p.dev.DMA()
	if msix {
		t.common.w16(virtiospec.ComMSIXConfig, uint16(pairs))
		if got := t.common.r16(virtiospec.ComMSIXConfig); got != uint16(pairs) {
			return fmt.Errorf("config-change MSI-X vector %d refused (reads 0x%x)", pairs, got)
		}
	}
	eventIdx := p.has(virtiospec.FeatEventIdx)
	for i := 0; i < pairs; i++ {
		vector := uint16(virtiospec.NoVector)
		if msix {
			vector = uint16(i)
		}
		q, err := setupQueue(t, dma, uint16(2*i), 2*cfg.RxRing, vector, msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, q.ring.mem)
		pool, err := nic.NewMempool(dma, cfg.PoolSize, cfg.BufSize)
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", i, err)
		}
		p.pools = append(p.pools, pool)
		rq := newRxQueue(q, pool, cfg.BufSize)
		rq.fill()
		p.rx = append(p.rx, rq)
	}
	for i := 0; i < cfg.TxQueues; i++ {
		q, err := setupQueue(t, dma, uint16(2*i+1), 2*cfg.TxRing, virtiospec.NoVector, msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, q.ring.mem)
		copies, err := nic.NewMempool(dma, q.ring.size()/2, cfg.BufSize)
		if err != nil {
			return fmt.Errorf("tx queue %d: %w", i, err)
		}
		p.pools = append(p.pools, copies)
		p.tx = append(p.tx, newTxQueue(q, dma, copies))
	}
	if p.has(virtiospec.FeatCtrlVQ) {
		c, err := newCtrlQueue(t, dma, uint16(2*p.maxPairs), msix, eventIdx)
		if err != nil {
			return err
		}
		p.rings = append(p.rings, c.ring.mem)
		p.ctrl = c
	}
	if err := pci.SetBusMaster(p.dev.Config(), true); err != nil {
		return err
	}
	t.addStatus(virtiospec.StatusDriverOK)
	if s := t.status(); s&(virtiospec.StatusFailed|virtiospec.StatusNeedsReset) != 0 || s&virtiospec.StatusDriverOK == 0 {
		return fmt.Errorf("device status 0x%02x after DRIVER_OK", s)
	}
	if pairs > 1 {
		if err := p.ctrl.setPairs(pairs); err != nil {
			return err
		}
	}
	for _, q := range p.rx {
		q.t.notifyQueue(q.notifyOff, q.index)
	}
	if msix {
		w, err := vectors.Watch(p.irqs.Other(), func() { p.linkCh.Add(1) })
		if err == nil {
			p.watch = w
		}
	}
	deadline := time.Now().Add(cfg.LinkTimeout)
	for !p.Link().Up && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// enableVectors sets up the interrupt vectors: MSI-X one per RX queue plus one for
// configuration changes; INTx one vector for everything (see vectors.Enable).
func (p *Port) enableVectors(pairs int) error {
	if p.cfg.NoIRQ {
		return nil
	}
	var err error
	p.irqs, err = vectors.Enable(p.dev, p.cfg.Interrupts, pairs)
	return err
}

// abort quiesces the device after a failed open: reset (the device lets go of every
// queue), vectors off, bus mastering off, memory freed.
func (p *Port) abort() {
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
