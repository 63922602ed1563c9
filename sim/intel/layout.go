package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
)

// layout is where a flavour keeps the registers the shared engine uses.
type layout struct {
	bar0Size   int
	queues     int // RX and TX queues modelled
	vectors    int // MSI-X vectors
	causeBits  int // vector cause bits visible in EICR
	rxBase     uint32
	txBase     uint32
	srrctlOff  uint32 // SRRCTL's offset inside an RX queue's block
	eicr       uint32
	eics       uint32
	eims       uint32
	eimc       uint32
	eiac       uint32
	eiam       uint32
	gpie       uint32
	ivar0      uint32
	ivarMisc   uint32
	mpc        uint32
	mrqc       uint32
	reta       uint32
	rssrk      uint32
	ralBase    uint32
	rarEntries int
	eitr       func(v int) uint32
	eitrNanos  func(reg uint32) int64 // minimum interrupt interval the EITR value sets
	// ivarEntry returns the IVAR register and bit shift of queue q's RX (tx=false) or TX
	// entry.
	ivarEntry func(q int, tx bool) (off uint32, shift uint)
	// srrctlDropEn is SRRCTL's DROP_EN bit.
	srrctlDropEn uint32
}

func (l *layout) rxq(q int, reg uint32) uint32 { return l.rxBase + uint32(q)*intelnic.QStride + reg }
func (l *layout) txq(q int, reg uint32) uint32 { return l.txBase + uint32(q)*intelnic.QStride + reg }
func (l *layout) srrctl(q int) uint32          { return l.rxq(q, l.srrctlOff) }
func (l *layout) ral(i int) uint32             { return l.ralBase + 8*uint32(i) }
func (l *layout) rah(i int) uint32             { return l.ralBase + 8*uint32(i) + 4 }

var layout82599 = layout{
	bar0Size:   0x20000,
	queues:     i82599.Queues,
	vectors:    i82599.Vectors,
	causeBits:  16,
	rxBase:     i82599.RXBase,
	txBase:     i82599.TXBase,
	srrctlOff:  i82599.QSRRCTL,
	eicr:       i82599.EICR,
	eics:       i82599.EICS,
	eims:       i82599.EIMS,
	eimc:       i82599.EIMC,
	eiac:       i82599.EIAC,
	eiam:       i82599.EIAM,
	gpie:       i82599.GPIE,
	ivar0:      i82599.IVAR0,
	ivarMisc:   i82599.IVARMisc,
	mpc:        i82599.MPC0,
	mrqc:       intelnic.MRQC,
	reta:       intelnic.RETA,
	rssrk:      intelnic.RSSRK,
	ralBase:    i82599.RAL0,
	rarEntries: 128,
	eitr:       i82599.EITR,
	// Interval in bits 11:3, in 2.048 µs units (10 GbE).
	eitrNanos:    func(reg uint32) int64 { return int64(reg&i82599.EitrIntervalMask) * 256 },
	ivarEntry:    i82599.IVAREntry,
	srrctlDropEn: i82599.SrrctlDropEn,
}

var layout82576 = layout{
	bar0Size:   0x20000,
	queues:     i82576.Queues,
	vectors:    i82576.Vectors,
	causeBits:  25,
	rxBase:     i82576.RXBase,
	txBase:     i82576.TXBase,
	srrctlOff:  i82576.QSRRCTL,
	eicr:       i82576.EICR,
	eics:       i82576.EICS,
	eims:       i82576.EIMS,
	eimc:       i82576.EIMC,
	eiac:       i82576.EIAC,
	eiam:       i82576.EIAM,
	gpie:       i82576.GPIE,
	ivar0:      i82576.IVAR0,
	ivarMisc:   i82576.IVARMisc,
	mpc:        i82576.MPC,
	mrqc:       intelnic.MRQC,
	reta:       intelnic.RETA,
	rssrk:      intelnic.RSSRK,
	ralBase:    intelnic.RAL0,
	rarEntries: 16,
	eitr:       i82576.EITR,
	// Interval in bits 14:2, in 1 µs units: the register value masked is in 0.25 µs.
	eitrNanos:    func(reg uint32) int64 { return int64(reg&i82576.EitrIntervalMask) * 250 },
	ivarEntry:    i82576.IVAREntry,
	srrctlDropEn: i82576.SrrctlDropEn,
}

func layoutFor(f Flavor) *layout {
	if f == X82576 {
		l := layout82576
		return &l
	}
	l := layout82599
	return &l
}
