package intel

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

// Queue register offsets inside a queue's 0x40-byte block, the same on both flavours.
const (
	qBAL    = 0x00
	qBAH    = 0x04
	qLEN    = 0x08
	qH      = 0x10
	qT      = 0x18
	qDCTL   = 0x28
	qWBAL   = 0x38
	qWBAH   = 0x3C
	qStride = 0x40
)

func (l *layout) rxq(q int, reg uint32) uint32 { return l.rxBase + uint32(q)*qStride + reg }
func (l *layout) txq(q int, reg uint32) uint32 { return l.txBase + uint32(q)*qStride + reg }
func (l *layout) srrctl(q int) uint32          { return l.rxq(q, l.srrctlOff) }
func (l *layout) ral(i int) uint32             { return l.ralBase + 8*uint32(i) }
func (l *layout) rah(i int) uint32             { return l.ralBase + 8*uint32(i) + 4 }

var layout82599 = layout{
	bar0Size:   0x20000,
	queues:     64,
	vectors:    64,
	causeBits:  16,
	rxBase:     0x1000,
	txBase:     0x6000,
	srrctlOff:  0x14,
	eicr:       0x800,
	eics:       0x808,
	eims:       0x880,
	eimc:       0x888,
	eiac:       0x810,
	eiam:       0x890,
	gpie:       0x898,
	ivar0:      0x900,
	ivarMisc:   0xA00,
	mpc:        0x3FA0,
	mrqc:       0x5818,
	reta:       0x5C00,
	rssrk:      0x5C80,
	ralBase:    0xA200,
	rarEntries: 128,
	eitr: func(v int) uint32 {
		if v < 24 {
			return 0x820 + 4*uint32(v)
		}
		return 0x12300 + 4*uint32(v-24)
	},
	// Interval in bits 11:3, in 2.048 µs units (10 GbE).
	eitrNanos: func(reg uint32) int64 { return int64(reg&0xFF8) * 256 },
	ivarEntry: func(q int, tx bool) (uint32, uint) {
		shift := uint(16 * (q & 1))
		if tx {
			shift += 8
		}
		return 0x900 + 4*uint32(q>>1), shift
	},
	srrctlDropEn: 1 << 28,
}

var layout82576 = layout{
	bar0Size:   0x20000,
	queues:     16,
	vectors:    25,
	causeBits:  25,
	rxBase:     0xC000,
	txBase:     0xE000,
	srrctlOff:  0x0C,
	eicr:       0x1580,
	eics:       0x1520,
	eims:       0x1524,
	eimc:       0x1528,
	eiac:       0x152C,
	eiam:       0x1530,
	gpie:       0x1514,
	ivar0:      0x1700,
	ivarMisc:   0x1740,
	mpc:        0x4010,
	mrqc:       0x5818,
	reta:       0x5C00,
	rssrk:      0x5C80,
	ralBase:    0x5400,
	rarEntries: 16,
	eitr:       func(v int) uint32 { return 0x1680 + 4*uint32(v) },
	// Interval in bits 14:2, in 1 µs units: the register value masked is in 0.25 µs.
	eitrNanos: func(reg uint32) int64 { return int64(reg&0x7FFC) * 250 },
	ivarEntry: func(q int, tx bool) (uint32, uint) {
		shift := uint((q & 8) << 1)
		if tx {
			shift += 8
		}
		return 0x1700 + 4*uint32(q&7), shift
	},
	srrctlDropEn: 1 << 31,
}

func layoutFor(f Flavor) *layout {
	if f == X82576 {
		l := layout82576
		return &l
	}
	l := layout82599
	return &l
}
