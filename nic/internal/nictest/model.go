package nictest

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Model is a modelled NIC under test, whichever family it belongs to: what the shared
// suites do to the device and read from it. The sim.Model's PCI is the function a driver
// opens, Device the strict model core (protocol and DMA faults, the IOMMU, the strict
// error a driver's misuse leaves), Counters the counters in the families' common terms.
type Model interface {
	sim.Model
	// QueuePairs is the number of queue pairs the driver told the device to use, when
	// the device has such a setting (ok false: it does not).
	QueuePairs() (n int, ok bool)
}

// FaultKind is a device fault every family's model can inject.
type FaultKind int

const (
	// DropFrames loses the next n arriving frames before they reach a buffer.
	DropFrames FaultKind = iota + 1
	// OversizeLength reports the next n receive completions with a length over their
	// buffer.
	OversizeLength
	// InterruptStorm raises queue q's interrupt n times with nothing completed (n = 1:
	// one spurious interrupt).
	InterruptStorm
)

// inject arms the shared fault kind on m.
func inject(m sim.Model, kind FaultKind, q, n int) {
	switch kind {
	case DropFrames:
		m.DropNext(n)
	case OversizeLength:
		m.OversizeNext(n)
	case InterruptStorm:
		m.InterruptStorm(q, n)
	default:
		panic(fmt.Sprintf("nictest: fault kind %d", kind))
	}
}

// ModelConfig are the settings a suite asks of a model; the family supplies the rest.
type ModelConfig struct {
	Wire  wire.Port  // the device's end of the cable (nil: unplugged)
	IOMMU *sim.IOMMU // nil: a new one
	// Ring is the most packets a ring of the test's ports holds (0: the default
	// nic.Config's); a family whose rings the device sizes makes room for it.
	Ring int
	// MTU is the MTU of the test's ports (0: the default nic.Config's); a family whose
	// device reports its own MTU (virtio's mtu field) reports this one.
	MTU int
}

// Family is a device family the suites run on: how to build its model and how its
// devices differ where the suites' expectations depend on it.
type Family struct {
	Name string
	New  func(ModelConfig) (Model, error)
	// Posted is how many receive buffers a driver keeps posted on a ring of n packets
	// (an Intel ring keeps one descriptor empty).
	Posted func(n int) int
	// ArmFiresPending: arming a queue whose frame arrived while it was disarmed raises
	// the interrupt at once (Intel: the cause stays pending until unmasked). Otherwise
	// (virtio event suppression) only the re-poll after arming finds that frame.
	ArmFiresPending bool
	// CountsMissed: the device counts frames it had no buffer for and the port reports
	// them in Stats().RxMissed (a virtio device reports no drops).
	CountsMissed bool
	// HoldsWhenFull: a frame that finds the ring empty is held, with those after it, until
	// the driver posts buffers and notifies the queue (QEMU's virtio-net), instead of being
	// dropped and counted as missed.
	HoldsWhenFull bool
	// DMAFaultCompletes: the device completes a buffer the IOMMU refused it to write
	// (virtio: a used entry of length 0), so the driver counts a receive error, reposts
	// the buffer and goes on. Otherwise (Intel) the device completes nothing and the
	// descriptor stays posted with its bad address.
	DMAFaultCompletes bool
	// StatsFromDevice: the port's packet counters are the device's statistics registers
	// (Intel), not the driver's, so a Forwarder's detached device counts nothing.
	StatsFromDevice bool
	// LargestFrame is the largest frame a buffer of size bytes takes before the MAC's
	// limit (nil: size).
	LargestFrame func(size int) int
	// NoINTx: the function has no INTx pin (an SR-IOV virtual function): the suites run
	// in MSI-X mode only, and asking for INTx, or falling back to it, fails the open.
	NoINTx bool
	// MaxQueues is the most queue pairs the family's driver takes (0: four or more); the
	// multi-queue suites use as many as there are.
	MaxQueues int
	// PromiscuousUntilFiltered: the device takes every frame until the driver first sets
	// its receive filter (a virtio-net device after reset; the driver leaves it so at
	// open). Otherwise it filters by the port's address from open.
	PromiscuousUntilFiltered bool
	// SetMACRefused: the device refuses nic.RxFilter's SetMAC (a VF whose administrator
	// set its MAC: the PF answers NACK).
	SetMACRefused bool
	// NoPromiscuous: the family's functions cannot be opened promiscuous (a VF).
	NoPromiscuous bool
	// Faults are the fault cases only this family's model can inject; Faults runs them
	// after the shared ones.
	Faults []FaultCase
	// Suites are the suites only this family's devices can run; Run runs them after the
	// shared ones.
	Suites []Suite
}

// FaultCase is one injected fault: after inject, send frames arrive from the peer and
// exactly wantRx of them must be received; check then looks at the counters.
type FaultCase struct {
	Name         string
	Inject       func(h *Harness)
	Send, WantRx int
	Check        func(t *testing.T, h *Harness)
	// FaultsOK: the fault leaves the strict model's error set.
	FaultsOK bool
}

// Suite is one named conformance suite.
type Suite struct {
	Name string
	Run  func(*testing.T, Driver)
}

// newModel is a Family's New for a model package: it copies base, lets set put the
// suite's settings in the copy, opens the model with open and wraps it as a Model with as.
func newModel[C, M any](base C, set func(*C, ModelConfig), open func(C) (M, error), as func(M) Model) func(ModelConfig) (Model, error) {
	return func(mc ModelConfig) (Model, error) {
		c := base
		set(&c, mc)
		m, err := open(c)
		if err != nil {
			return nil, err
		}
		return as(m), nil
	}
}
