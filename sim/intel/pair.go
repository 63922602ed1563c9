package intel

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Pair is two modelled ports of one dual-port adapter: functions 0 and 1 behind one
// IOMMU (as two functions in one VFIO container), each plugged into its own in-memory
// wire. A buffer received on one port can be transmitted by the other without a copy.
type Pair struct {
	Models [2]*Model
	// Far are the test's ends of the two ports' wires: frames sent on Far[i] arrive at
	// port i, and frames port i transmits arrive at Far[i]'s handler.
	Far   [2]wire.Port
	IOMMU *sim.IOMMU
}

// NewPair builds two ports from cfg (its Wire and IOMMU are ignored): port i is function
// i of cfg.Addr's device, with the default MAC for that address unless cfg.MAC is set
// (then port 1's last byte is one higher).
func NewPair(cfg Config) (*Pair, error) {
	p := &Pair{IOMMU: sim.NewIOMMU()}
	for i := range p.Models {
		c := cfg
		c.Addr.Function = uint8(i)
		c.IOMMU = p.IOMMU
		if cfg.MAC != nil {
			c.MAC = append(c.MAC[:0:0], cfg.MAC...)
			if len(c.MAC) == 6 {
				c.MAC[5] += byte(i)
			}
		}
		far, cable := wire.Pair()
		c.Wire = cable
		m, err := New(c)
		if err != nil {
			far.Close()
			cable.Close()
			p.Close()
			return nil, fmt.Errorf("port %d: %w", i, err)
		}
		p.Models[i], p.Far[i] = m, far
	}
	return p, nil
}

// Close closes both models and the far ends of their wires.
func (p *Pair) Close() error {
	var errs []error
	for i := range p.Models {
		if p.Models[i] != nil {
			errs = append(errs, p.Models[i].Close())
		}
		if p.Far[i] != nil {
			errs = append(errs, p.Far[i].Close())
		}
	}
	return errors.Join(errs...)
}
