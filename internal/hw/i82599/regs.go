// Package i82599 holds the Intel 82599's register offsets, bit fields and device ids
// (82599 datasheet, section 8; Linux ixgbe_type.h) that differ from the 82576's; what the
// two parts share is in package intelnic.
//
// The package holds numbers only: the driver (nic/ixgbe) and the device model
// (sim/intel) each implement their own behaviour from them.
package i82599

import "github.com/uiod/uiod/internal/hw/intelnic"

// Register offsets.
const (
	EICR     = 0x00800
	EICS     = 0x00808
	EIAC     = 0x00810
	EITR0    = 0x00820 // EITR 0-23; 24-63 at EITR24
	EIMS     = 0x00880
	EIMC     = 0x00888
	EIAM     = 0x00890
	GPIE     = 0x00898
	IVAR0    = 0x00900 // 64 registers
	IVARMisc = 0x00A00
	EICSEx0  = 0x00A90 // EICS_EX, EIMS_EX, EIMC_EX, EIAM_EX: 2 registers each
	EIMSEx0  = 0x00AA0
	EIMCEx0  = 0x00AB0
	EIAMEx0  = 0x00AD0
	EITR24   = 0x12300

	ESDP      = 0x00020 // extended software-definable pins
	RDRXCTL   = 0x02F00
	RXCTRL    = 0x03000
	RXPBSIZE0 = 0x03C00 // 8 registers
	MPC0      = 0x03FA0 // missed packets per packet buffer, 8 registers
	HLREG0    = 0x04240
	MAXFRS    = 0x04268
	AUTOC     = 0x042A0
	LINKS     = 0x042A4
	DMATXCTL  = 0x04A80
	FCTRL     = 0x05080
	MCSTCTRL  = 0x05090
	SECRXCTRL = 0x08D00
	SECRXSTAT = 0x08D04
	VFTA      = 0x0A000 // VLAN filter table, 128 registers
	RAL0      = 0x0A200 // receive address low/high pairs, 128 entries, 8 bytes apart
	UTA       = 0x0F400 // unicast hash table array, 128 registers
	EEC       = 0x10010
	EERD      = 0x10014
	SWSM      = 0x10140

	RXBase  = 0x01000 // queue 0's RX ring registers; queue q is intelnic.QStride·q further
	TXBase  = 0x06000
	QSRRCTL = 0x14 // SRRCTL inside an RX queue's block (queues 0-15 also at SRRCTL(q))
	QDCARX  = 0x0C // DCA_RXCTRL inside an RX queue's block
	QDCATX  = 0x0C // DCA_TXCTRL inside a TX queue's block

	RAREntries = 128 // receive address registers

	Queues  = 64 // RX and TX queues
	Vectors = 64 // MSI-X vectors
)

// EITR returns vector n's interrupt throttle register.
func EITR(n int) uint32 {
	if n < 24 {
		return EITR0 + 4*uint32(n)
	}
	return EITR24 + 4*uint32(n-24)
}

// IVAR returns the n-th interrupt vector allocation register (n < 64).
func IVAR(n int) uint32 { return IVAR0 + 4*uint32(n) }

// RDBAL returns RX queue q's ring base register; the other ring registers follow it at
// the intelnic.Q* offsets.
func RDBAL(q int) uint32 { return RXBase + intelnic.QStride*uint32(q) }

// RXDCTL returns RX queue q's control register.
func RXDCTL(q int) uint32 { return RDBAL(q) + intelnic.QDCTL }

// DCARXCTRL returns RX queue q's DCA control register (q < 64).
func DCARXCTRL(q int) uint32 { return RDBAL(q) + QDCARX }

// DCATXCTRL returns TX queue q's DCA control register (q < 64).
func DCATXCTRL(q int) uint32 { return TDBAL(q) + QDCATX }

// RAL returns receive address n's low register (n < RAREntries); RAH is 4 bytes further.
func RAL(n int) uint32 { return RAL0 + 8*uint32(n) }

// SRRCTL returns the 82598-compatible alias of RX queue q's SRRCTL (q < 16).
func SRRCTL(q int) uint32 { return 0x02100 + 4*uint32(q) }

// TDBAL returns TX queue q's ring base register.
func TDBAL(q int) uint32 { return TXBase + intelnic.QStride*uint32(q) }

// TXDCTL returns TX queue q's control register.
func TXDCTL(q int) uint32 { return TDBAL(q) + intelnic.QDCTL }

// MPC returns packet buffer n's missed packet counter (n < 8).
func MPC(n int) uint32 { return MPC0 + 4*uint32(n) }

// QPRDC returns RX queue q's drop counter (q < 16).
func QPRDC(q int) uint32 { return 0x01430 + intelnic.QStride*uint32(q) }

// EIMCEx returns the n-th extended interrupt mask clear register (n < 2).
func EIMCEx(n int) uint32 { return EIMCEx0 + 4*uint32(n) }

// QPRC returns RX queue q's good packet counter (q < 16); QBRC's low and high halves
// follow it.
func QPRC(q int) uint32 { return 0x01030 + intelnic.QStride*uint32(q) }

// QPTC returns TX queue q's good packet counter (q < 16).
func QPTC(q int) uint32 { return 0x08680 + 4*uint32(q) }

// QBTC returns the low half of TX queue q's byte counter (q < 16); the high half follows.
func QBTC(q int) uint32 { return 0x08700 + 8*uint32(q) }

// IVAREntry returns the IVAR register and bit shift of queue q's RX (or TX) vector
// allocation entry: queue q in IVAR(q>>1), byte 2·(q&1) (+1 for TX).
func IVAREntry(q int, tx bool) (off uint32, shift uint) {
	shift = uint(16 * (q & 1))
	if tx {
		shift += 8
	}
	return IVAR(q >> 1), shift
}
