package nictest

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// OpenWith adapts a driver's Open function to an Opener.
func OpenWith[P Port](open func(dev pci.Device, cfg nic.Config) (P, error)) Opener {
	return func(dev pci.Device, cfg nic.Config) (Port, error) {
		p, err := open(dev, cfg)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return p, nil
	}
}

// Run runs every suite against drv, each as a subtest.
func Run(t *testing.T, drv Driver) {
	suites := []struct {
		name string
		run  func(*testing.T, Driver)
	}{
		{"OpenStrict", Open},
		{"ForwardByteExact", Forward},
		{"InterruptsMSIX", InterruptsMSIX},
		{"InterruptsINTx", InterruptsINTx},
		{"InterruptModes", InterruptModes},
		{"InterruptModeration", Moderation},
		{"LinkChange", LinkChange},
		{"Faults", Faults},
		{"QueueDrops", QueueDrops},
		{"TxRecovery", TxRecovery},
		{"IOMMUCatchesBadAddress", IOMMU},
		{"RSS", RSS},
		{"ForwardAcrossAddressSpaces", AcrossAddressSpaces},
		{"BurstAllocs", BurstAllocs},
		{"BufferSizes", BufferSizes},
		{"ArmAllocs", ArmAllocs},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) { s.run(t, drv) })
	}
}

// BenchmarkForwardBatches runs BenchmarkForward at batch sizes 1, 32 and 256, each as a
// sub-benchmark batch=N.
func BenchmarkForwardBatches(b *testing.B, drv Driver) {
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			BenchmarkForward(b, drv, batch)
		})
	}
}
