package i82576

// Register bits.
const (
	CtrlSLU    = 1 << 6 // set link up
	CtrlFrcSpd = 1 << 11
	CtrlFrcDpx = 1 << 12
	CtrlPHYRST = 1 << 31

	StatusFD        = 1 << 0
	StatusLU        = 1 << 1
	StatusSpeedMask = 3 << 6
	StatusSpeed100  = 1 << 6
	StatusSpeed1000 = 2 << 6

	MdicRegShift = 16
	MdicPHYShift = 21
	MdicOpWrite  = 1 << 26
	MdicOpRead   = 2 << 26
	MdicOpMask   = 3 << 26
	MdicReady    = 1 << 28
	MdicIntEn    = 1 << 29
	MdicError    = 1 << 30

	IcrTXDW     = 1 << 0
	IcrLSC      = 1 << 2
	IcrRXDW     = 1 << 7 // receive descriptor write-back (RXT0)
	IcrMDAC     = 1 << 9 // MDI/O access complete
	IcrAsserted = 1 << 31
	ImsValid    = 0x77D4FBFD // the IMS bits that name a cause

	RctlEN     = 1 << 1
	RctlUPE    = 1 << 3
	RctlMPE    = 1 << 4
	RctlLPE    = 1 << 5
	RctlBAM    = 1 << 15
	RctlMOMask = 3 << 12 // the multicast table's filter type (MO)
	RctlSECRC  = 1 << 26

	TctlEN        = 1 << 1
	TctlPSP       = 1 << 3
	TctlCT        = 0x0f << 4
	TctlCOLD      = 0x3f << 12
	TctlRTLC      = 1 << 24
	TctlConfigure = TctlPSP | TctlCT | TctlCOLD | TctlRTLC

	SrrctlBSizePktMask = 0x7f // 1 KB units
	SrrctlDropEn       = 1 << 31

	GpieNSICR = 1 << 0

	EitrIntervalShift = 2
	EitrIntervalMask  = 0x1fff << 2 // bits 14:2, 1 µs units
	EitrCntIgnr       = 1 << 31

	MrqcRSS = 0x2 // MRQC.MRQE: RSS
	// MrqcIPv6TCPEx hashes IPv6 TCP (with extension headers, Linux
	// E1000_MRQC_RSS_FIELD_IPV6_TCP_EX); QEMU's igb hashes IPv6 TCP only with this bit.
	MrqcIPv6TCPEx = 1 << 18

	// DcaTxctlTxWBRO lets a TX descriptor write-back pass the data before it (relaxed
	// ordering, DCA_TXCTRL bit 11, Linux E1000_DCA_TXCTRL_TX_WB_RO_EN).
	DcaTxctlTxWBRO = 1 << 11

	RlpmlMax = 0x3fff // RLPML is 14 bits wide
)

// PHY (MII, IEEE 802.3 clause 22) registers and bits reached through MDIC; the internal
// PHY is at address 1.
const (
	PHYAddr   = 1
	PHYBMCR   = 0
	PHYBMSR   = 1
	PHYID1    = 2
	PHYID2    = 3
	PHYANAR   = 4
	PHYANLPAR = 5
	PHYGCR    = 9  // 1000BASE-T control
	PHYGSR    = 10 // 1000BASE-T status

	BmcrANRestart = 1 << 9
	BmcrANEnable  = 1 << 12
	BmcrReset     = 1 << 15
	BmsrLinkUp    = 1 << 2
	BmsrANDone    = 1 << 5
)
