// Package modelrig is the rig of the tests that run the Intel drivers on the device model
// under the dataplane (the fault tests and the soak). Drivers describes each driver: which
// model flavour speaks its NIC, its RSS key, the TX ring registers a test reads to see
// descriptors a hung queue never fetched, and where its buffers live. Rig is two modelled
// ports forwarded into each other by a dataplane, with UDP flow frames (FlowFrame) sent
// into one and checked for order out of the other, and an Account of where every frame
// went; Probe sends one frame per flow and checks that each came out and that RSS placed
// them where the driver's key predicts (HoldRx makes a poll thread late on a queue for
// the probe's test); CloseAndCheck checks that every buffer came back and no DMA mapping
// is left.
package modelrig

import (
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
	"github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// Driver is one NIC flavour and its driver.
type Driver struct {
	Name   string // the driver's name for nic.Open
	Flavor intel.Flavor
	Key    []byte // the RSS key the driver programs
	// TDH and TDT are the offsets of TX queue q's head and tail registers.
	TDH, TDT func(q int) uint32
	// Pools returns the mempools of p's RX queues and the copy pools of its TX queues.
	Pools func(p nic.Port) []*nic.Mempool
}

// Drivers are the Intel drivers on their model flavours.
var Drivers = []Driver{
	{Name: "ixgbe", Flavor: intel.X82599, Key: ixgbe.RSSKey[:],
		TDH:   func(q int) uint32 { return 0x06010 + 0x40*uint32(q) },
		TDT:   func(q int) uint32 { return 0x06018 + 0x40*uint32(q) },
		Pools: func(p nic.Port) []*nic.Mempool { return p.(*ixgbe.Port).Pools() }},
	{Name: "igb", Flavor: intel.X82576, Key: igb.RSSKey[:],
		TDH:   func(q int) uint32 { return 0x0E010 + 0x40*uint32(q) },
		TDT:   func(q int) uint32 { return 0x0E018 + 0x40*uint32(q) },
		Pools: func(p nic.Port) []*nic.Mempool { return p.(*igb.Port).Pools() }},
}

// CloseAndCheck closes the ports of a model pair and checks what closing must leave: every
// buffer back in its pool (l2fwd leaves one port's buffers in the other's TX rings, so only
// after both closed), no device fault but DMA faults when dmaOK, and no DMA mapping.
func CloseAndCheck(t testing.TB, pair *sim.Pair[*intel.Model], ports []nic.Port, pools [][]*nic.Mempool, dmaOK bool) {
	t.Helper()
	for i, p := range ports {
		if err := p.Close(); err != nil {
			t.Errorf("close port %d: %v", i, err)
		}
	}
	for i := range ports {
		for j, pool := range pools[i] {
			if pool.Avail() != pool.Size() {
				t.Errorf("port %d pool %d: %d of %d buffers free after close", i, j, pool.Avail(), pool.Size())
			}
		}
		fs, n := pair.Models[i].Device().Faults()
		for _, f := range fs {
			if f.Kind != sim.DMAFault || !dmaOK {
				t.Errorf("model %d: %d faults, one: %v", i, n, f)
				break
			}
		}
	}
	if n := pair.IOMMU.Mappings(); n != 0 {
		t.Errorf("%d DMA mappings left after closing the ports", n)
	}
}
