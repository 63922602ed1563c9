package virtio

import "github.com/uiod/uiod/sim"

// NewPair builds two functions from cfg (its Wire and IOMMU are ignored) on one IOMMU
// (as two devices in one VFIO container: a buffer of one may be sent out of the other
// without copying), each on its own wire: port i is function i of cfg.Addr's device,
// with cfg.MAC (default QEMU's 52:54:00:12:34:56) and port 1's last byte one higher.
func NewPair(cfg Config) (*sim.Pair[*Model], error) {
	if cfg.MAC == nil {
		cfg.MAC = defaultMAC
	}
	return sim.NewPair(cfg.Addr, cfg.MAC, func(p sim.PairPort) (*Model, error) {
		c := cfg
		c.Addr, c.MAC, c.Wire, c.IOMMU = p.Addr, p.MAC, p.Wire, p.IOMMU
		return New(c)
	})
}
