// Package i82576 holds the Intel 82576's register offsets and bit fields (82576
// datasheet, section 8; Linux e1000_regs.h and e1000_82575.h) that differ from the
// 82599's; what the two parts share is in package intelnic.
//
// The package holds numbers only: the driver (nic/igb) and the device model (sim/intel)
// each implement their own behaviour from them, and QEMU's igb model checks the numbers
// independently in the guest tests.
package i82576

import "github.com/uiod/uiod/internal/hw/intelnic"

// DeviceID is the 82576's PCI device id (copper).
const DeviceID = 0x10C9

// PCI device ids of the 82576's SerDes parts, whose link runs through the PCS (Linux
// e1000_hw.h E1000_DEV_ID_82576_FIBER, _SERDES, _NS_SERDES, _SERDES_QUAD).
const (
	DeviceFiber      = 0x10E6
	DeviceSerDes     = 0x10E7
	DeviceNSSerDes   = 0x1518
	DeviceSerDesQuad = 0x150D
)

// Register offsets.
const (
	EECD     = 0x00010
	EERD     = 0x00014
	MDIC     = 0x00020
	ICR      = 0x000C0
	ICS      = 0x000C8
	IMS      = 0x000D0
	IMC      = 0x000D8
	IAM      = 0x000E0
	RCTL     = 0x00100
	TCTL     = 0x00400
	RXPBS    = 0x02404
	MPC      = 0x04010 // missed packets, read to clear
	RLPML    = 0x05004
	VFTA     = 0x05600 // VLAN filter table, 128 registers
	SWSM     = 0x05B50
	UTA      = 0x0A000 // unicast hash table array, 128 registers
	GPIE     = 0x01514
	EICS     = 0x01520
	EIMS     = 0x01524
	EIMC     = 0x01528
	EIAC     = 0x0152C
	EIAM     = 0x01530
	EICR     = 0x01580
	EITR0    = 0x01680
	IVAR0    = 0x01700
	IVARMisc = 0x01740

	RXBase  = 0x0C000 // queue 0's RX ring registers; queue q is intelnic.QStride·q further
	TXBase  = 0x0E000
	QSRRCTL = 0x0C    // SRRCTL inside an RX queue's block
	QRQDPC  = 0x30    // RQDPC (per-queue drop count) inside an RX queue's block
	QDCATX  = 0x14    // DCA_TXCTRL inside a TX queue's block
	RAL16   = 0x054E0 // receive addresses 16-23 (the 82576 has 24)

	RAREntries = 24 // receive address registers

	PQGPRC   = 0x10010 // per-queue statistics, 0x100 apart
	PQGPTC   = 0x10014
	PQGORC   = 0x10018
	PQGOTC   = 0x10034
	PQMPRC   = 0x10038
	PQStride = 0x100

	Queues  = 16 // RX and TX queues
	Vectors = 25 // MSI-X vectors
)

// EITR returns vector n's interrupt throttle register.
func EITR(n int) uint32 { return EITR0 + 4*uint32(n) }

// IVAR returns the n-th interrupt vector allocation register.
func IVAR(n int) uint32 { return IVAR0 + 4*uint32(n) }

// RDBAL returns RX queue q's ring base register; the other ring registers follow it at
// the intelnic.Q* offsets.
func RDBAL(q int) uint32 { return RXBase + intelnic.QStride*uint32(q) }

// SRRCTL returns RX queue q's split and replication control register.
func SRRCTL(q int) uint32 { return RDBAL(q) + QSRRCTL }

// RXDCTL returns RX queue q's control register.
func RXDCTL(q int) uint32 { return RDBAL(q) + intelnic.QDCTL }

// RQDPC returns RX queue q's drop counter.
func RQDPC(q int) uint32 { return RDBAL(q) + QRQDPC }

// TDBAL returns TX queue q's ring base register.
func TDBAL(q int) uint32 { return TXBase + intelnic.QStride*uint32(q) }

// TXDCTL returns TX queue q's control register.
func TXDCTL(q int) uint32 { return TDBAL(q) + intelnic.QDCTL }

// DCATXCTRL returns TX queue q's DCA control register.
func DCATXCTRL(q int) uint32 { return TDBAL(q) + QDCATX }

// RAL returns receive address n's low register (n < RAREntries); RAH is 4 bytes further.
func RAL(n int) uint32 {
	if n < 16 {
		return intelnic.RAL0 + 8*uint32(n)
	}
	return RAL16 + 8*uint32(n-16)
}

// IVAREntry returns the IVAR register and bit shift of queue q's RX (or TX) vector
// allocation entry: queue q in IVAR(q&7), byte (q&8)>>2 (+1 for TX).
func IVAREntry(q int, tx bool) (off uint32, shift uint) {
	shift = uint(q&8) << 1
	if tx {
		shift += 8
	}
	return IVAR(q & 7), shift
}
