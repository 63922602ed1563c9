// Package simrig measures idle policies on a bench of model NICs: two model ports of one
// kind (82599, 82576 or virtio-net), driven by the real driver for it, forwarded l2fwd by
// the dataplane on one polling thread, with the latency generator sending on one port's
// cable and receiving on the other's. It is what `uiod latency --sim` runs: for each
// policy, a latency result and the poll thread's CPU share and sleep counters.
package simrig

import (
	"fmt"
	"net"
	"strings"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/simnic"
	"github.com/uiod/uiod/wire"
)

// The NICs a bench can be built of, by driver name.
const (
	NICIxgbe  = simnic.Ixgbe  // model 82599 ports, the ixgbe driver
	NICIgb    = simnic.IGB    // model 82576 ports, the igb driver
	NICIgbvf  = simnic.IGBVF  // model 82576 VFs with their PFs, the igbvf driver
	NICVirtio = simnic.Virtio // model virtio-net devices, the virtio driver
)

// NICs lists the NIC names Open accepts, the default first.
var NICs = simnic.Names

// virtioQueueSize is the model virtio-net's virtqueue size: 1024 descriptors, QEMU's
// largest rx_queue_size, so the driver's rings hold 512 packets like the Intel ports'.
const virtioQueueSize = 1024

// Ports are two model ports driven by the real driver for them, their cables plugged into
// the wires given to Open, sharing one IOMMU (l2fwd sends port 0's buffers out of port 1).
type Ports struct {
	// NIC is the kind of port (one of NICs).
	NIC    string
	NICs   [2]nic.Port
	models [2]sim.Model
}

// Open builds two model 82599 ports on cables and opens them with the ixgbe driver.
func Open(cables [2]wire.Port) (*Ports, error) { return OpenNIC(NICIxgbe, cables) }

// OpenNIC builds two model ports of the named kind (one of NICs) on cables and opens them
// with the driver of that name, promiscuous, with MSI-X. A VF cannot be promiscuous: port
// 0's VF has the probes' destination address from its PF instead, and the PFs' MAC
// anti-spoof check is off (as "spoofchk off"), since l2fwd sends the probes with their
// source address.
func OpenNIC(name string, cables [2]wire.Port) (*Ports, error) { return OpenNICFor(name, cables, 0) }

// OpenNICFor is OpenNIC with ports that carry frames of frameSize bytes: their MTU is
// raised to it when it is longer than a standard frame (a jumbo probe), which a kind
// without jumbo frames refuses.
func OpenNICFor(name string, cables [2]wire.Port, frameSize int) (*Ports, error) {
	if !simnic.Known(name) {
		return nil, fmt.Errorf("nic %q: want %s", name, strings.Join(NICs, ", "))
	}
	s := &Ports{NIC: name}
	iommu := sim.NewIOMMU()
	for i := range s.models {
		c := simnic.Config{Addr: pci.Addr{Bus: 1, Device: 0, Function: uint8(i)}, Wire: cables[i], IOMMU: iommu}
		switch name {
		case NICIgbvf:
			c.MAC = net.HardwareAddr{0x02, 0x75, 0x69, 0x6f, 0x76, byte(i)}
			if i == 0 {
				c.MAC = latency.DefaultAddrs().DstMAC
			}
		case NICVirtio:
			c.MAC, c.QueueSize = []byte{0x52, 0x54, 0, 0x12, 0x34, byte(0x56 + i)}, virtioQueueSize
		}
		m, err := simnic.New(name, c)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("model port %d: %w", i, err)
		}
		s.models[i] = m
		ncfg := nic.Config{Promiscuous: name != NICIgbvf}
		if frameSize > latency.StdFrameSize {
			ncfg.MTU = frameSize - nic.EthHeader
		}
		p, err := nic.Open(m.PCI(), name, ncfg)
		if err != nil {
			s.Close()
			if ncfg.MTU != 0 {
				return nil, fmt.Errorf("open model port %d for %d-byte probes: %w", i, frameSize, err)
			}
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
		if s.models[i] != nil {
			s.models[i].Close()
		}
	}
}

// Drops describes the frames the model ports and drivers lost so far ("" if none).
func (s *Ports) Drops() string {
	var out string
	for i, m := range s.models {
		c, ps := m.Counters(), s.NICs[i].Stats()
		c.Refused += ps.RxErrors
		c.TxErrors += ps.TxErrors
		if c.Lost() > 0 {
			out += fmt.Sprintf(" (port %d: missed %d, refused %d, tx errors %d, wire lost %d)", i, c.Missed, c.TooLong+c.Refused+c.Dropped, c.TxErrors, c.WireLost)
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
