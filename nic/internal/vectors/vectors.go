// Package vectors is the interrupt-vector setup the NIC families share: enabling MSI-X
// (one vector per RX queue plus one for the other causes) or INTx, with the rule for
// falling back from one to the other, the map from RX queues to vectors, and a watcher that
// serves the other causes' vector on its own goroutine.
package vectors

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// Set is the interrupt vectors of a port. The zero Set is a port without interrupts.
type Set struct {
	// Kind is the interrupt mode in use (meaningless when All is empty).
	Kind irq.Kind
	// All lists every vector the port enabled: in MSI-X mode RX queue q's at q and the
	// other causes' after them, in INTx mode the one vector.
	All []*irq.Vector
	// Rx is RX queue q's vector at q (the INTx vector for every queue in INTx mode).
	Rx []*irq.Vector
}

// Enable enables dev's vectors for rxQueues RX queues in mode. MSI-X: vector q for RX queue
// q and vector rxQueues for the other causes. INTx: one vector that every RX queue
// shares. The default mode asks for MSI-X and takes INTx only when the backend reports
// MSI-X as not supported (pci.ErrNotSupported, uio_pci_generic); any other failure is an
// error.
func Enable(dev pci.Device, mode nic.IRQMode, rxQueues int) (Set, error) {
	var s Set
	if mode == nic.IRQDefault || mode == nic.IRQMSIX {
		vecs, err := dev.IRQs(irq.MSIX, rxQueues+1)
		switch {
		case err == nil:
			s.Kind, s.All = irq.MSIX, vecs
		case mode == nic.IRQDefault && errors.Is(err, pci.ErrNotSupported):
			mode = nic.IRQINTx
		default:
			return Set{}, fmt.Errorf("enable msi-x: %w", err)
		}
	}
	if mode == nic.IRQINTx {
		vecs, err := dev.IRQs(irq.INTx, 1)
		if err != nil {
			return Set{}, fmt.Errorf("enable intx: %w", err)
		}
		s.Kind, s.All = irq.INTx, vecs
	}
	s.Rx = make([]*irq.Vector, rxQueues)
	for q := range s.Rx {
		if s.Kind == irq.MSIX {
			s.Rx[q] = s.All[q]
		} else {
			s.Rx[q] = s.All[0]
		}
	}
	return s, nil
}

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (s *Set) IRQKind() (kind irq.Kind, ok bool) { return s.Kind, len(s.All) > 0 }

// RxVector is RX queue q's vector, nil when the port has no interrupts.
func (s *Set) RxVector(q int) *irq.Vector {
	if s.Rx == nil {
		return nil
	}
	return s.Rx[q]
}

// Other is the MSI-X vector of the other causes (link or configuration changes), nil in
// INTx mode and without interrupts.
func (s *Set) Other() *irq.Vector {
	if s.Kind != irq.MSIX || len(s.All) <= len(s.Rx) {
		return nil
	}
	return s.All[len(s.Rx)]
}

// Disable disables the vectors, if any, and forgets them.
func (s *Set) Disable(dev pci.Device) {
	if len(s.All) > 0 {
		dev.IRQs(s.Kind, 0)
	}
	*s = Set{}
}
