package virtio

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/vectors"
	"github.com/uiod/uiod/pci"
)

// Options are virtio-specific choices beyond nic.Config.
type Options struct {
	// NoEventIdx declines VIRTIO_F_EVENT_IDX even when the device offers it, so that
	// interrupts and notifications are suppressed with the ring flags.
	NoEventIdx bool
}

// Port is an open virtio-net port. It implements nic.Port.
type Port struct {
	dev      pci.Device
	t        *transport
	cfg      nic.Config
	opt      Options
	features uint64
	devMTU   int                              // the device's mtu field when it offers VIRTIO_NET_F_MTU, else 0
	mac      atomic.Pointer[net.HardwareAddr] // the device's address at open, then SetMAC's
	maxPairs int
	rx       []*rxQueue
	tx       []*txQueue
	ctrl     *ctrlQueue
	filt     rxFilter // the receive filter the user set (filter.go), under closeMu
	pools    []*nic.Mempool
	rings    []pci.Mem

	irqs   vectors.Set
	cfgVec *irq.Vector // MSI-X: configuration changes
	watch  *vectors.Watcher

	linkCh atomic.Uint64
	isrMu  sync.Mutex // INTx: ISR reads by different queues' threads

	// Recovery from DEVICE_NEEDS_RESET (recover.go). stopped is written only by Recover,
	// which runs with no goroutine in the queues, and read plainly by their owners.
	stopped    bool
	needs      nic.RecoverSignal
	retryAt    atomic.Int64 // UnixNano before which a failed recovery is not asked for again
	recoverErr atomic.Pointer[error]
	resets     atomic.Uint64

	closeOnce sync.Once
	closeErr  error
	closeMu   sync.RWMutex // Link holds it shared while it reads registers, Close exclusively
	closed    bool         // registers are gone: Link answers from lastLink
	lastLink  nic.Link
}

var _ nic.Recoverer = (*Port)(nil)

func init() {
	nic.Register(nic.Driver{
		Name:  "virtio",
		Match: Match,
		Devices: []nic.DeviceID{
			{Vendor: virtiospec.VendorID, Device: virtiospec.DeviceIDNet, Name: "virtio-net"},
			{Vendor: virtiospec.VendorID, Device: virtiospec.DeviceIDNetTransitional, Name: "virtio-net transitional, modern interface"},
		},
		Facts: nic.Facts{Chip: "virtio-net (virtio)", Limits: nic.Limits{Queues: MaxQueuePairs, Ring: maxRing, MaxMTU: MaxMTU},
			DescSize: virtiospec.DescLen, PairedQueues: true},
		Open: func(dev pci.Device, cfg nic.Config) (nic.Port, error) {
			p, err := Open(dev, cfg)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
	})
}

// Match reports whether vendor:device is a virtio-net function (modern or transitional).
func Match(vendor, device uint16) bool {
	return vendor == virtiospec.VendorID && (device == virtiospec.DeviceIDNet || device == virtiospec.DeviceIDNetTransitional)
}

// Name is the driver's name for a function it matches ("virtio-net"), or "".
func Name(vendor, device uint16) string {
	if Match(vendor, device) {
		return "virtio-net"
	}
	return ""
}

// Close implements nic.Port: it stops the configuration watcher, resets the device (which
// then no longer touches any queue), gives the rings' buffers back to their pools and
// closes the device (interrupts and bus mastering off, then DMA memory freed).
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		if p.watch != nil {
			p.watch.Stop()
		}
		l := p.Link()
		p.closeMu.Lock()
		p.lastLink, p.closed = l, true
		p.closeMu.Unlock()
		err := p.t.reset()
		p.releaseBuffers()
		p.closeErr = errors.Join(err, p.dev.Close())
	})
	return p.closeErr
}

// MAC implements nic.Port: the device's address (or a random one for a device that has
// none), or the one SetMAC set since.
func (p *Port) MAC() net.HardwareAddr {
	if m := p.mac.Load(); m != nil {
		return *m
	}
	return nil
}

// NumRxQueues implements nic.Port.
func (p *Port) NumRxQueues() int { return len(p.rx) }

// NumTxQueues implements nic.Port.
func (p *Port) NumTxQueues() int { return len(p.tx) }

// RxBurst implements nic.Port. It returns 0 after a recovery that failed.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int {
	if p.stopped {
		return 0
	}
	return p.rx[q].burst(bufs)
}

// TxBurst implements nic.Port. Buffers from a pool in another DMA address space are
// copied into the queue's own buffers first. It takes nothing after a recovery that
// failed.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int {
	if p.stopped {
		return 0
	}
	return p.tx[q].burst(bufs)
}

// TxPending is how many frames TX queue q has handed to the device and not yet had back,
// as of its last TxBurst (a TxBurst with no buffers only reclaims). The device sends
// asynchronously (QEMU from a bottom half after the notification), so a caller that wants
// its last frames on the wire polls this down to 0 before Close, which resets the device.
// Call it from the goroutine that owns the queue.
func (p *Port) TxPending(q int) int {
	if p.stopped {
		return 0 // a reset discarded what was in flight
	}
	return p.tx[q].inFlight
}

// Link implements nic.Port: the device's link status (always up without STATUS) and, with
// SPEED_DUPLEX, its speed (0 when the device does not know it). A device that needs a
// reset (DEVICE_NEEDS_RESET) reports the link down and asks its user for Recover; one
// whose configuration never reads the same twice reports it down.
func (p *Port) Link() nic.Link {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return p.lastLink
	}
	if broken(p.t.status()) {
		p.askRecover()
		return nic.Link{}
	}
	l := nic.Link{Up: true}
	d := p.t.device
	err := p.t.readDeviceConfig(func() {
		if p.has(virtiospec.FeatStatus) {
			l.Up = d.r16(virtiospec.NetCfgStatus)&virtiospec.NetStatusLinkUp != 0
		}
		if p.has(virtiospec.FeatSpeedDuplex) && d.fits(virtiospec.NetCfgSpeed, 4) {
			if s := d.r32(virtiospec.NetCfgSpeed); s != virtiospec.SpeedUnknown && s <= 1<<30 {
				l.SpeedMbps = int(s)
			}
		}
	})
	if err != nil {
		return nic.Link{}
	}
	return l
}

// LinkChanges is the number of configuration-change interrupts seen (link status changes
// among them).
func (p *Port) LinkChanges() uint64 { return p.linkCh.Load() }

// Features are the negotiated feature bits.
func (p *Port) Features() uint64 { return p.features }

// QueuePairs is the number of queue pairs in use.
func (p *Port) QueuePairs() int { return len(p.rx) }

// MaxQueuePairs is the number of queue pairs the device offers.
func (p *Port) MaxQueuePairs() int { return p.maxPairs }

// Device is the PCI function the port drives.
func (p *Port) Device() pci.Device { return p.dev }

// Stats implements nic.Port. RxMissed stays 0: a virtio device reports no drops.
// DeviceResets counts the resets that recovered the device from DEVICE_NEEDS_RESET.
// TxPackets and TxBytes count the frames TxBurst handed to the device (it reports no
// transmit failures), the last of them possibly still in flight.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for _, q := range p.rx {
		s.RxPackets += q.st.packets.Load()
		s.RxBytes += q.st.bytes.Load()
		s.RxErrors += q.st.errors.Load()
	}
	for _, q := range p.tx {
		s.TxPackets += q.st.packets.Load()
		s.TxBytes += q.st.bytes.Load()
		s.TxErrors += q.st.errors.Load()
	}
	s.DeviceResets = p.resets.Load()
	return s
}
