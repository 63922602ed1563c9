package sim

import (
	"errors"
	"fmt"
	"net"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/wire"
)

// Pair is two modelled ports of one dual-port adapter: functions 0 and 1 behind one
// IOMMU (as two functions in one VFIO container), each plugged into its own in-memory
// wire. A buffer received on one port can be transmitted by the other without a copy.
// Every model package's NewPair returns one; M is its model type (or Model).
type Pair[M Model] struct {
	Models [2]M
	// Far are the test's ends of the two ports' wires: frames sent on Far[i] arrive at
	// port i, and frames port i transmits arrive at Far[i]'s handler.
	Far   [2]wire.Port
	IOMMU *IOMMU
}

// PairPort is what a pair gives each of its ports: its address and MAC, its cable and
// the pair's IOMMU.
type PairPort struct {
	Addr  pci.Addr
	MAC   net.HardwareAddr // nil: the model's default for Addr
	Wire  wire.Port
	IOMMU *IOMMU
}

// NewPair builds a Pair: build makes each port from its PairPort. Port i is function i
// of addr's device, with mac and its last byte i higher (nil stays nil: the model's
// default for that address). On error NewPair closes what it built. Model packages call
// it from their NewPair.
func NewPair[M Model](addr pci.Addr, mac net.HardwareAddr, build func(PairPort) (M, error)) (*Pair[M], error) {
	p := &Pair[M]{IOMMU: NewIOMMU()}
	for i := range p.Models {
		far, cable := wire.Pair()
		pp := PairPort{Addr: addr, MAC: mac, Wire: cable, IOMMU: p.IOMMU}
		pp.Addr.Function = uint8(i)
		if mac != nil {
			pp.MAC = append(mac[:0:0], mac...)
			if len(pp.MAC) == 6 {
				pp.MAC[5] += byte(i)
			}
		}
		m, err := build(pp)
		if err != nil {
			far.Close()
			cable.Close()
			for j := range i {
				p.Models[j].Close()
				p.Far[j].Close()
			}
			return nil, fmt.Errorf("port %d: %w", i, err)
		}
		p.Models[i], p.Far[i] = m, far
	}
	return p, nil
}

// Close closes both models and the far ends of their wires.
func (p *Pair[M]) Close() error {
	var errs []error
	for i := range p.Models {
		errs = append(errs, p.Models[i].Close(), p.Far[i].Close())
	}
	return errors.Join(errs...)
}
