package nictest

import (
	"testing"

	"github.com/uiod/uiod/sim/virtio"
)

// Virtio is the family of the virtio-net model (sim/virtio) with base's settings (its
// Wire, IOMMU and Strict are set per model). Without a Steer function the model steers by
// the third byte of the IPv4 source address, so that Harness.Send's frames (from
// 10.0.0.1) reach queue 0 as they do through the Intel NICs' RSS. It has no suites of its
// own: moderation and per-queue drop counters do not exist in virtio-net.
func Virtio(base virtio.Config) Family {
	return Family{
		Name:              "virtio",
		New:               newModel(base, virtioSettings, virtio.New, func(m *virtio.Model) Model { return VirtioModel{m} }),
		Posted:            func(n int) int { return n },
		DMAFaultCompletes: true,
		HoldsWhenFull:     true,
		// QEMU's virtio-net is promiscuous after reset, and the driver sends no filter
		// until its user sets one.
		PromiscuousUntilFiltered: true,
		Faults:                   virtioFaults,
	}
}

// bySrcByte2 steers by the third byte of the IPv4 source address.
func bySrcByte2(f []byte, pairs int) int { return int(f[28]) % pairs }

// virtioSettings puts a suite's settings in a virtio-net model's Config: the wire, the
// IOMMU and strictness, the port's mtu and a virtqueue large enough for its ring, and the
// default steering when base has none.
func virtioSettings(c *virtio.Config, mc ModelConfig) {
	c.Wire, c.IOMMU, c.Strict = mc.Wire, mc.IOMMU, true
	if c.MTU == 0 {
		c.MTU = mc.MTU // the device's mtu is the port's (VIRTIO_NET_F_MTU offered) when it has one
	}
	if c.Steer == nil {
		c.Steer = bySrcByte2
	}
	if c.QueueSize < 2*mc.Ring { // two descriptors per packet
		c.QueueSize = 2 * mc.Ring
	}
}

// VirtioModel is a virtio-net model as a Model.
type VirtioModel struct{ *virtio.Model }

var _ Model = VirtioModel{}

// QueuePairs implements Model: the pairs set through the control queue.
func (m VirtioModel) QueuePairs() (int, bool) { return m.Pairs(), true }

// Virtio is the virtio model behind h.Model (nil on another family).
func (h *Harness) Virtio() *virtio.Model {
	if vm, ok := h.Model.(VirtioModel); ok {
		return vm.Model
	}
	return nil
}

// virtioFaults are the used-ring faults only the virtio model injects.
var virtioFaults = []FaultCase{
	{
		Name:   "bad descriptor index",
		Inject: func(h *Harness) { h.Virtio().BadIDNext(2) },
		Send:   5, WantRx: 3,
		Check: rxErrors(2),
	},
	{
		Name:   "used index ahead of the entry",
		Inject: func(h *Harness) { h.Virtio().UsedAheadNext(1) },
		Send:   5, WantRx: 4,
		Check: rxErrors(1),
	},
	{
		Name:   "used index beyond the posted buffers",
		Inject: func(h *Harness) { h.Virtio().JumpUsedIndex(500) },
		Send:   1, WantRx: 0,
		Check: rxErrors(1),
	},
}

// rxErrors checks that the port counted n receive errors.
func rxErrors(n uint64) func(t *testing.T, h *Harness) {
	return func(t *testing.T, h *Harness) {
		if e := h.Port.Stats().RxErrors; e != n {
			t.Errorf("RxErrors %d, want %d", e, n)
		}
	}
}
