// Package simrig measures idle policies on a bench of model NICs: two model 82599 ports,
// driven by the real ixgbe driver, forwarded l2fwd by the dataplane on one polling thread,
// with the latency generator sending on one port's cable and receiving on the other's. It
// is what `uiod latency --sim` runs: for each policy, a latency result and the poll
// thread's CPU share and sleep counters.
package simrig

import (
	"fmt"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// Ports are two model 82599 ports driven by the real ixgbe driver, their cables plugged
// into the wires given to Open, sharing one IOMMU (l2fwd sends port 0's buffers out of
// port 1).
type Ports struct {
	Models [2]*intel.Model
	NICs   [2]*ixgbe.Port
}

// Open builds two model ports on cables and opens them with the ixgbe driver.
func Open(cables [2]wire.Port) (*Ports, error) {
	s := &Ports{}
	iommu := sim.NewIOMMU()
	for i := range s.Models {
		m, err := intel.New(intel.Config{
			Addr:  pci.Addr{Bus: 1, Device: 0, Function: uint8(i)},
			Wire:  cables[i],
			IOMMU: iommu,
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("model port %d: %w", i, err)
		}
		s.Models[i] = m
		p, err := ixgbe.Open(m.Device(), nic.Config{Promiscuous: true})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open model port %d: %w", i, err)
		}
		s.NICs[i] = p
	}
	return s, nil
}

// Close closes the driver ports (which quiesce and close their devices), then the models.
func (s *Ports) Close() {
	for i := range s.NICs {
		if s.NICs[i] != nil {
			s.NICs[i].Close()
		}
		if s.Models[i] != nil {
			s.Models[i].Close()
		}
	}
}

// Drops describes the frames the model ports and drivers lost so far ("" if none).
func (s *Ports) Drops() string {
	var out string
	for i, m := range s.Models {
		ms, ps := m.Stats(), s.NICs[i].Stats()
		if n := ms.Missed + ms.Dropped + ms.BadFrames + ms.Filtered + ms.RxOff + ms.TxErrors + ms.TxLinkDown + ms.WireLost + ps.RxErrors + ps.TxErrors; n > 0 {
			out += fmt.Sprintf(" (port %d: missed %d, refused %d, tx errors %d, wire lost %d)", i,
				ms.Missed, ms.BadFrames+ms.Filtered+ms.RxOff+ps.RxErrors, ms.TxErrors+ps.TxErrors+ms.TxLinkDown, ms.WireLost)
		}
	}
	return out
}

// Forward starts a dataplane with one polling thread forwarding l2fwd between the two
// ports under policy pol.
func (s *Ports) Forward(pol idle.PolicyConfig) (*dataplane.Dataplane, error) {
	dp, err := dataplane.New(dataplane.Config{
		App: dataplane.L2Fwd,
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{
			{Name: "p0", RxPort: s.NICs[0], TxPort: s.NICs[1]},
			{Name: "p1", RxPort: s.NICs[1], TxPort: s.NICs[0]},
		}}},
		Policy: pol,
	})
	if err != nil {
		return nil, err
	}
	if err := dp.Start(); err != nil {
		return nil, err
	}
	return dp, nil
}
