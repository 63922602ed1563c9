package nictest

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	intelcore "github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// Intel is the family of the Intel model (sim/intel) in flavour f with quirks q (the
// zero Quirks are the silicon's). Its own suites: interrupt moderation (EITR), the
// per-queue drop counters, TX hang recovery (the model's TX hang injections) and the RSS
// state after every recovery, and the IEEE 1588 unit (Timesync).
func Intel(f intel.Flavor, q intel.Quirks) Family {
	return IntelWith(intel.Config{Flavor: f, Quirks: q})
}

// IntelWith is the family of the Intel model built from cfg (its flavour, device id,
// quirks and power-on state; the suites set the wire, IOMMU and strictness).
func IntelWith(cfg intel.Config) Family {
	return Family{
		Name: "intel " + cfg.Flavor.String(),
		New: newModel(cfg, func(c *intel.Config, mc ModelConfig) {
			c.Wire, c.IOMMU, c.Strict = mc.Wire, mc.IOMMU, true
		}, intel.New, func(m *intel.Model) Model { return IntelModel{m} }),
		Posted:          func(n int) int { return n - 1 },
		ArmFiresPending: true,
		CountsMissed:    true,
		StatsFromDevice: true,
		LargestFrame: func(size int) int {
			if size == 16*1024 {
				return size - 8 // the 82576's RLPML holds at most 16383 bytes, FCS included
			}
			return size
		},
		Faults: intelFaults,
		Suites: []Suite{
			{"InterruptModeration", Moderation},
			{"QueueDrops", QueueDrops},
			{"TxRecovery", TxRecovery},
			{"RSSAfterRecovery", RSSAfterRecovery},
			{"Timesync", Timesync},
			{"TimesyncRxRace", TimesyncRxRace},
			{"TimesyncWrap", TimesyncWrap},
		},
	}
}

// IntelModel is an Intel model as a Model.
type IntelModel struct{ *intel.Model }

var _ Model = IntelModel{}

// QueuePairs implements Model: an Intel NIC has no queue-count setting.
func (m IntelModel) QueuePairs() (int, bool) { return 0, false }

// Intel is the Intel model behind h.Model, or the Intel engine behind a VF model (nil
// on another family).
func (h *Harness) Intel() *intel.Model {
	switch m := h.Model.(type) {
	case IntelModel:
		return m.Model
	case interface{ Engine() *intel.Model }:
		return m.Engine()
	}
	return nil
}

// IntelPort is an Intel driver's port: nic.Port with its link and interrupt counters.
type IntelPort interface {
	nic.Port
	LinkChanges() uint64
	IRQKind() (irq.Kind, bool)
}

// OpenWith adapts an Intel driver's Open function to an Opener; core is the driver's
// internal function that hands out the shared Intel port inside its own.
func OpenWith[P IntelPort](open func(dev pci.Device, cfg nic.Config) (P, error), core func(P) *intelcore.Port) Opener {
	return func(dev pci.Device, cfg nic.Config) (Port, error) {
		p, err := open(dev, cfg)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return intelPort{p, core(p)}, nil
	}
}

// Rings is the shared Intel port behind p (nil if p is another family's), for the
// Intel-only checks on its descriptor rings.
func Rings(p Port) *intelcore.Port {
	if ip, ok := p.(intelPort); ok {
		return ip.core
	}
	return nil
}

// DriverPort is the Intel driver's own port behind p (nil if p is another family's), for
// a driver's tests of its own methods.
func DriverPort(p Port) IntelPort {
	if ip, ok := p.(intelPort); ok {
		return ip.IntelPort
	}
	return nil
}

// intelPort implements Internals over the Intel descriptor rings.
type intelPort struct {
	IntelPort                 // the driver's port, as users see it
	core      *intelcore.Port // its rings
}

var _ Port = intelPort{}

func (p intelPort) Pools() []*nic.Mempool { return intelcore.Pools(p.core) }

func (p intelPort) RxPool(q int) *nic.Mempool { return p.core.RxQueue(q).Pool() }
func (p intelPort) RxPosted(q int) int        { return p.core.RxQueue(q).Fill() }
func (p intelPort) TxCopies(q int) uint64     { return p.core.TxQueue(q).Stats().Copies }
func (p intelPort) Reclaim(q int)             { p.core.TxQueue(q).Reclaim() }

// SetRxAddr writes the buffer address of descriptor 0, the one a fresh ring fills first
// (the suites call it before any frame arrived).
func (p intelPort) SetRxAddr(iommu *sim.IOMMU, q int, bus uint64) error {
	rq := p.core.RxQueue(q)
	ring, err := iommu.Translate(rq.IOVA(), rq.Len())
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(ring[0:], bus)
	return nil
}

func (p intelPort) DeviceSide(iommu *sim.IOMMU) (DeviceSide, error) {
	rq, tq := p.core.RxQueue(0), p.core.TxQueue(0)
	d := &intelSide{rxMask: rq.Size() - 1, txMask: tq.Size() - 1, rxLen: 60}
	var err error
	if d.rxDesc, err = iommu.Translate(rq.IOVA(), rq.Len()); err != nil {
		return nil, err
	}
	if d.txDesc, err = iommu.Translate(tq.IOVA(), tq.Len()); err != nil {
		return nil, err
	}
	return d, nil
}

// intelSide writes advanced-descriptor write-backs: length and DD|EOP on receive, DD on
// transmit.
type intelSide struct {
	rxDesc, txDesc []byte
	rxNext, txNext int
	rxMask, txMask int
	rxLen          uint32 // the length of the frames received
}

// SetRxLen implements FrameLenSetter.
func (d *intelSide) SetRxLen(n int) { d.rxLen = uint32(n) }

func (d *intelSide) CompleteRx(n int) {
	for i := 0; i < n; i++ {
		desc := d.rxDesc[d.rxNext*16 : d.rxNext*16+16]
		binary.LittleEndian.PutUint32(desc[12:], d.rxLen)
		sim.StoreUint32(desc[8:], 0x3) // DD | EOP
		d.rxNext = (d.rxNext + 1) & d.rxMask
	}
}

func (d *intelSide) CompleteTx(n int) {
	for i := 0; i < n; i++ {
		sim.StoreUint32(d.txDesc[d.txNext*16+12:], 0x1) // DD
		d.txNext = (d.txNext + 1) & d.txMask
	}
}

// intelFaults are the faults only the Intel model injects.
var intelFaults = []FaultCase{
	{
		Name: "DD on an unposted descriptor",
		Inject: func(h *Harness) {
			if err := h.Intel().WriteUnpostedDD(0); err != nil {
				h.T.Fatal(err)
			}
		},
		Send: 5, WantRx: 5,
		Check: func(t *testing.T, h *Harness) {
			if e := Rings(h.Port).RxQueue(0).Stats().Errors; e != 1 {
				t.Errorf("queue errors %d, want 1", e)
			}
		},
	},
	{
		Name:   "bad DMA address",
		Inject: func(h *Harness) { h.Intel().BadDMANext(1) },
		Send:   3, WantRx: 2,
		Check: func(t *testing.T, h *Harness) {
			if h.Dev.IOMMU().Faults() == 0 {
				t.Error("IOMMU saw no fault")
			}
		},
		FaultsOK: true,
	},
	{
		Name: "rx stall",
		Inject: func(h *Harness) {
			h.Intel().StallRX(true)
			h.Send(4)
			if n := h.Consume(0); n != 0 {
				h.T.Errorf("%d frames received while stalled", n)
			}
			h.Intel().StallRX(false)
		},
		Send: 1, WantRx: 5,
	},
}
