package intelnic

// DescLen is the size of an RX or TX descriptor.
const DescLen = 16

// Advanced TX data descriptor: cmd_type_len bits (the length is bits 15:0, the
// descriptor type bits 23:20).
const (
	TxdDEXT        = 1 << 29
	TxdRS          = 1 << 27
	TxdIFCS        = 1 << 25
	TxdEOP         = 1 << 24
	TxdTypeShift   = 20
	TxdTypeData    = 3 // DTYP of a data descriptor
	TxdTypeCtx     = 2 // DTYP of a context descriptor
	TxdDTYPData    = TxdTypeData << TxdTypeShift
	TxdPaylenShift = 14 // olinfo_status: PAYLEN
)

// Legacy TX descriptor command byte (bits 31:24 of the third word).
const (
	LegacyEOP  = 1 << 0
	LegacyIFCS = 1 << 1
	LegacyRS   = 1 << 3
)

// Descriptor write-back status bits.
const (
	TxStatusDD  = 1 << 0
	RxStatusDD  = 1 << 0
	RxStatusEOP = 1 << 1
)

// RSS types in the advanced RX write-back's low four bits.
const (
	RSSTypeNone    = 0
	RSSTypeIPv4TCP = 1
	RSSTypeIPv4    = 2
	RSSTypeIPv6TCP = 3
	RSSTypeIPv6    = 5
	RSSTypeIPv4UDP = 7
	RSSTypeIPv6UDP = 8
)
