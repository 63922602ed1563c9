package intelnic

// A queue's ring registers sit in a 0x40-byte block (RX blocks from the part's RX base,
// TX blocks from its TX base); these are the offsets inside the block.
const (
	QBAL    = 0x00 // RDBAL / TDBAL
	QBAH    = 0x04
	QLEN    = 0x08
	QH      = 0x10 // RDH / TDH
	QT      = 0x18 // RDT / TDT
	QDCTL   = 0x28 // RXDCTL / TXDCTL
	QWBAL   = 0x38 // TDWBAL: TX head write-back address
	QWBAH   = 0x3C
	QStride = 0x40

	// MaxDescs bounds a ring's descriptors: the head and tail registers hold 16-bit
	// indexes.
	MaxDescs = 1 << 16

	DctlEnable   = 1 << 25 // RXDCTL/TXDCTL queue enable
	TdwbalEnable = 1 << 0  // TDWBAL: write the head back instead of DD bits
)
