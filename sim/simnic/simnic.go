// Package simnic builds a device model by the name of the NIC driver that drives it:
// "ixgbe" (the 82599, sim/intel), "igb" (the 82576, sim/intel), "igbvf" (an 82576 VF
// with its PF, sim/igbvf) and "virtio" (virtio-net, sim/virtio). It is the one place
// that maps a NIC name to a model, for the daemon's sim ports and the `uiod latency
// --sim` bench; tests that need one model's own knobs use its package.
package simnic

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/sim/virtio"
	"github.com/uiod/uiod/wire"
)

// The NIC names New takes: each is the driver that opens the model.
const (
	Ixgbe  = "ixgbe"  // the 82599 model
	IGB    = "igb"    // the 82576 model
	IGBVF  = "igbvf"  // the 82576 VF model with its PF
	Virtio = "virtio" // the virtio-net model
)

// Names lists the NIC names New takes, the default (the 82599) first.
var Names = []string{Ixgbe, IGB, IGBVF, Virtio}

// Config is what every model takes. Addr, MAC (nil: the model's default; an igbvf's is
// the address its PF assigned), Wire, IOMMU, Strict and Log mean what they mean in each
// model package's Config; NewPair sets its own Wire and IOMMU.
type Config struct {
	Addr   pci.Addr
	MAC    net.HardwareAddr
	Wire   wire.Port
	IOMMU  *sim.IOMMU
	Strict bool
	Log    *zap.Logger
	// QueueSize is the virtio-net model's virtqueue size (0: its default); the Intel
	// models' rings are sized by their drivers.
	QueueSize int
	// MTU is the virtio-net model's mtu (VIRTIO_NET_F_MTU offered with it; 0: not
	// offered); the Intel models' maximum frame is programmed by their drivers.
	MTU int
	// AntiSpoof turns an igbvf's PF MAC anti-spoof check on. It is off by default (as
	// "ip link set PF vf N spoofchk off"; QEMU's igb has none) so that a forwarding
	// application may send frames with their senders' addresses.
	AntiSpoof bool
}

// New builds the model the NIC name names (one of Names).
func New(name string, c Config) (sim.Model, error) {
	switch name {
	case Ixgbe, IGB:
		return intel.New(c.intel(name))
	case IGBVF:
		return igbvf.New(c.igbvf())
	case Virtio:
		return virtio.New(c.virtio())
	}
	return nil, unknown(name)
}

// NewPair builds the two-port adapter of the model the NIC name names (one of Names), as
// that model package's NewPair does: c's Wire and IOMMU are ignored.
func NewPair(name string, c Config) (*sim.Pair[sim.Model], error) {
	switch name {
	case Ixgbe, IGB:
		return widen(intel.NewPair(c.intel(name)))
	case IGBVF:
		return widen(igbvf.NewPair(c.igbvf()))
	case Virtio:
		return widen(virtio.NewPair(c.virtio()))
	}
	return nil, unknown(name)
}

// unknown is the error for a name that is none of Names.
func unknown(name string) error {
	return fmt.Errorf("sim nic %q: no such model, want one of %s", name, strings.Join(Names, ", "))
}

// Known reports whether name is one of Names.
func Known(name string) bool { return slices.Contains(Names, name) }

// widen holds a model package's pair by the sim.Model interface.
func widen[M sim.Model](p *sim.Pair[M], err error) (*sim.Pair[sim.Model], error) {
	if err != nil {
		return nil, err
	}
	return &sim.Pair[sim.Model]{Models: [2]sim.Model{p.Models[0], p.Models[1]}, Far: p.Far, IOMMU: p.IOMMU}, nil
}

func (c Config) intel(name string) intel.Config {
	f := intel.X82599
	if name == IGB {
		f = intel.X82576
	}
	return intel.Config{Addr: c.Addr, MAC: c.MAC, Wire: c.Wire, IOMMU: c.IOMMU, Strict: c.Strict, Flavor: f, Log: c.Log}
}

func (c Config) igbvf() igbvf.Config {
	return igbvf.Config{Addr: c.Addr, MAC: c.MAC, Wire: c.Wire, IOMMU: c.IOMMU, Strict: c.Strict, NoAntiSpoof: !c.AntiSpoof, Log: c.Log}
}

func (c Config) virtio() virtio.Config {
	return virtio.Config{Addr: c.Addr, MAC: c.MAC, Wire: c.Wire, IOMMU: c.IOMMU, Strict: c.Strict, QueueSize: c.QueueSize, MTU: c.MTU, Log: c.Log}
}
