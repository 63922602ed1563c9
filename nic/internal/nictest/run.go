package nictest

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/irq"
)

// Shared are the suites every driver runs, whatever its device family.
var Shared = []Suite{
	{"OpenStrict", Open},
	{"ForwardByteExact", Forward},
	{"InterruptsMSIX", InterruptsMSIX},
	{"InterruptsINTx", InterruptsINTx},
	{"InterruptModes", InterruptModes},
	{"LinkChange", LinkChange},
	{"Faults", Faults},
	{"IOMMUCatchesBadAddress", IOMMU},
	{"MultiQueue", MultiQueue},
	{"ForwardAcrossAddressSpaces", AcrossAddressSpaces},
	{"ForwardSharedAddressSpace", SharedAddressSpace},
	{"BurstAllocs", BurstAllocs},
	{"BufferSizes", BufferSizes},
	{"MTUs", MTUs},
	{"ArmAllocs", ArmAllocs},
	{"FrameBetweenArmAndWait", FrameBetweenArmAndWait},
	{"RepollAfterArm", RepollAfterArm},
	{"ConcurrentWakeups", ConcurrentWakeups},
	{"RxFilter", RxFilter},
}

// Run runs the shared suites and then drv.Family's own against drv, each as a subtest.
func Run(t *testing.T, drv Driver) {
	for _, s := range append(append([]Suite(nil), Shared...), drv.Family.Suites...) {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, drv) })
	}
}

// IRQKinds are the interrupt kinds the suites try on drv's devices: MSI-X, and INTx
// unless the family has none.
func (drv Driver) IRQKinds() []irq.Kind {
	if drv.Family.NoINTx {
		return []irq.Kind{irq.MSIX}
	}
	return []irq.Kind{irq.MSIX, irq.INTx}
}

// Queues is n, or fewer when the family's devices take fewer queues.
func (drv Driver) Queues(n int) int {
	if q := drv.Family.MaxQueues; q > 0 && q < n {
		return q
	}
	return n
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
