package igbvf

import "github.com/uiod/uiod/sim"

// NewPair builds two VFs, each with its PF, from cfg (its Wire and IOMMU are ignored) on
// one IOMMU, each PF's port on its own wire: VF i is function i of cfg.Addr's device,
// with the default MAC for that address unless cfg.MAC is set (then VF 1's last byte is
// one higher).
func NewPair(cfg Config) (*sim.Pair[*Model], error) {
	return sim.NewPair(cfg.Addr, cfg.MAC, func(p sim.PairPort) (*Model, error) {
		c := cfg
		c.Addr, c.MAC, c.Wire, c.IOMMU = p.Addr, p.MAC, p.Wire, p.IOMMU
		return New(c)
	})
}
