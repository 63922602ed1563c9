package virtio

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// MaxMTU is the largest MTU a virtio port takes, the Intel ports' largest (9710): the
// device's own limit (its mtu field, with VIRTIO_NET_F_MTU) may be lower and is checked
// at Open. One 16 KiB buffer would hold frames of an MTU up to 16366, but a frame of a
// virtio port above the other ports' largest could cross no other uiod port, so the
// driver stops where they do (docs/design.md §11).
const MaxMTU = 9710

// maxBufSize is the largest packet buffer a port takes (nic.Config.Validate).
const maxBufSize = 16384

// deviceMTU reads the device's mtu field (VIRTIO_NET_F_MTU offered), before the features
// are accepted, as the spec lets a driver do to decide whether it can drive the device.
func (p *Port) deviceMTU() (int, error) {
	d := p.t.device
	if !d.fits(virtiospec.NetCfgMTU, 2) {
		return 0, fmt.Errorf("device configuration of %d bytes has no mtu (bytes %d..%d), which VIRTIO_NET_F_MTU promises", d.len, virtiospec.NetCfgMTU, virtiospec.NetCfgMTU+1)
	}
	var mtu int
	if err := p.t.readDeviceConfig(func() { mtu = int(d.r16(virtiospec.NetCfgMTU)) }); err != nil {
		return 0, err
	}
	return mtu, nil
}

// mtuFeature decides VIRTIO_NET_F_MTU from the features offered and the port's MTU and
// buffers: it is accepted when the receive buffers hold a frame of the device's mtu (a
// driver that negotiates it must supply buffers for that, the spec says). A port MTU
// above the standard one needs it — without it a device delivers frames of 1514 bytes
// only — so such a port is refused on a device without it, on one whose mtu is lower than
// the port's, and when its buffers are too small for the device's frames.
func (p *Port) mtuFeature(offered uint64) (uint64, error) {
	cfg := p.cfg
	if cfg.MTU > MaxMTU {
		return 0, nil // checkConfig refuses it, naming the driver's limit
	}
	if offered&(1<<virtiospec.FeatMTU) == 0 {
		if cfg.MTU > nic.DefaultMTU {
			return 0, fmt.Errorf("mtu %d: the device does not offer VIRTIO_NET_F_MTU, so it delivers frames of a %d-byte MTU only (QEMU: -device virtio-net-pci,host_mtu=%d): %w",
				cfg.MTU, nic.DefaultMTU, cfg.MTU, pci.ErrNotSupported)
		}
		return 0, nil
	}
	dev, err := p.deviceMTU()
	if err != nil {
		return 0, err
	}
	p.devMTU = dev
	switch {
	case cfg.MTU > dev:
		return 0, fmt.Errorf("mtu %d: more than the device's mtu %d: %w", cfg.MTU, dev, pci.ErrNotSupported)
	case cfg.BufSize >= nic.MaxFrame(dev):
		return 1 << virtiospec.FeatMTU, nil
	case cfg.MTU > nic.DefaultMTU && nic.BufSizeFor(dev) > maxBufSize:
		return 0, fmt.Errorf("mtu %d: below the device's mtu %d, whose frames of up to %d bytes no receive buffer (at most %d bytes) holds, "+
			"as VIRTIO_NET_F_MTU (needed above mtu %d) requires: set the device's mtu to %d (QEMU: host_mtu=%d): %w",
			cfg.MTU, dev, nic.MaxFrame(dev), maxBufSize, nic.DefaultMTU, cfg.MTU, cfg.MTU, pci.ErrNotSupported)
	case cfg.MTU > nic.DefaultMTU:
		return 0, fmt.Errorf("mtu %d: below the device's mtu %d, whose frames of up to %d bytes the %d-byte receive buffers do not hold, "+
			"as VIRTIO_NET_F_MTU (needed above mtu %d) requires: set mtu %d, buffers of %d bytes, or the device's mtu to %d: %w",
			cfg.MTU, dev, nic.MaxFrame(dev), cfg.BufSize, nic.DefaultMTU, dev, nic.BufSizeFor(dev), cfg.MTU, pci.ErrNotSupported)
	}
	return 0, nil // a standard MTU: declined, the device then delivers standard frames
}
