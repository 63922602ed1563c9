package nictest

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/sim/intel"
)

// IGBVF is the family of the 82576 virtual function model (sim/igbvf) with base's
// settings (its Wire, IOMMU and Strict are set per model): Intel descriptor rings and
// interrupt logic, no INTx, no packet-buffer miss counter (the queue's drop counter,
// RQDPC, is in the VF's BAR), and receive sizes the PF caps at 9728 bytes with the FCS.
// Its own suites: interrupt moderation and per-queue drops; the Intel faults run on its
// engine.
func IGBVF(base igbvf.Config) Family {
	return Family{
		Name: "igbvf",
		New: newModel(base, func(c *igbvf.Config, mc ModelConfig) {
			c.Wire, c.IOMMU, c.Strict = mc.Wire, mc.IOMMU, true
		}, igbvf.New, func(m *igbvf.Model) Model { return IGBVFModel{m} }),
		Posted:          func(n int) int { return n - 1 },
		ArmFiresPending: true,
		StatsFromDevice: true,
		NoINTx:          true,
		SetMACRefused:   !base.NoMAC,
		NoPromiscuous:   true,
		MaxQueues:       1,
		LargestFrame:    func(size int) int { return min(size, i82576.VFMaxFrame-4) },
		Faults:          intelFaults,
		Suites:          []Suite{{"InterruptModeration", Moderation}, {"QueueDrops", QueueDrops}},
	}
}

// IGBVFModel is a VF model as a Model.
type IGBVFModel struct{ *igbvf.Model }

var _ Model = IGBVFModel{}

// QueuePairs implements Model: a VF has no queue-count setting.
func (m IGBVFModel) QueuePairs() (int, bool) { return 0, false }

var _ interface{ Engine() *intel.Model } = IGBVFModel{}
