package i82599

import "github.com/uiod/uiod/internal/hw/intelnic"

// Register bits.
const (
	CtrlResetMask = intelnic.CtrlLinkReset | intelnic.CtrlReset

	CtrlExtNSDis = 1 << 16 // no-snoop disable

	RdrxctlCRCStrip = 1 << 1
	RdrxctlDMAIDone = 1 << 3
	// RSCFRSTSIZE cleared, RSCACKC and FCOE_WRFIX set: the bits Linux's
	// ixgbe_setup_rdrxctl says "hardware requires" on the 82599.
	RdrxctlRSCFrstSize = 0x1f << 17
	RdrxctlRSCACKC     = 1 << 25
	RdrxctlFCoEWrFix   = 1 << 26

	RxctrlRXEN = 1 << 0

	SecrxctrlRxDis = 1 << 1 // SECRXCTRL.RX_DIS: halt the receive data path
	SecrxstatRdy   = 1 << 0 // SECRXSTAT.SECRX_RDY: the data path is empty

	Hlreg0TxCRCEn   = 1 << 0
	Hlreg0RxCRCStrp = 1 << 1
	Hlreg0JumboEn   = 1 << 2
	Hlreg0TxPadEn   = 1 << 10

	// TXDCTL thresholds (8.2.3.9.10), each a 7-bit descriptor count: prefetch
	// (PTHRESH), host (HTHRESH) and write-back (WTHRESH).
	TxdctlPthreshShift = 0
	TxdctlHthreshShift = 8
	TxdctlWthreshShift = 16
	TxdctlThreshMask   = 0x7f
	TxdctlThresholds   = TxdctlThreshMask<<TxdctlPthreshShift | TxdctlThreshMask<<TxdctlHthreshShift | TxdctlThreshMask<<TxdctlWthreshShift

	MaxfrsShift = 16   // MFS: largest frame accepted, FCS included
	MaxFrameFCS = 9728 // the 82599's largest frame (IXGBE_MAX_JUMBO_FRAME_SIZE)

	FctrlMPE = 1 << 8
	FctrlUPE = 1 << 9
	FctrlBAM = 1 << 10

	// MCSTCTRL: the multicast table's filter type (MO, which address bits hash) and
	// its enable (MFE).
	McstctrlMOMask = 3
	McstctrlMFE    = 1 << 2

	SrrctlBSizePktShift = 0 // 1 KB units, bits 4:0
	SrrctlBSizePktMask  = 0x1f
	SrrctlDropEn        = 1 << 28

	// DCA_RXCTRL bit 12 (relaxed ordering of descriptor write-backs) comes up set on
	// some parts; cleared, a write-back cannot pass the buffer data it describes.
	DcaRxCtrlDescWBRO = 1 << 12

	// DCA_TXCTRL bit 11 (relaxed ordering of TX descriptor write-backs) comes up set;
	// DPDK clears it ("this hoses bookkeeping if things aren't delivered in order").
	DcaTxCtrlDescWBRO = 1 << 11

	DmatxctlTE = 1 << 0

	EsdpSDP3 = 1 << 3 // SFP+ TX_DISABLE on the 82599's SFP+ boards (1: laser off)

	AutocAnRestart = 1 << 12
	AutocLMSShift  = 13
	AutocLMSMask   = 7 << AutocLMSShift

	LinksUp        = 1 << 30
	LinksSpeedMask = 3 << 28
	LinksSpeed10G  = 3 << 28
	LinksSpeed1G   = 2 << 28
	LinksSpeed100M = 1 << 28
	LinksStatus    = 1 << 7

	GpieOCD = 1 << 5

	// IVAR_MISC: byte 0 is the TCP timer's vector, byte 1 the other causes' (LSC).
	IvarMiscOtherShift = 8

	EicrRTxQMask = 0xffff  // queue causes (vector bits in MSI-X mode)
	EicrLSC      = 1 << 20 // link status change

	EitrIntervalShift = 3
	EitrIntervalMask  = 0x1ff << 3 // bits 11:3
	EitrCntWDis       = 1 << 31

	MrqcRSSEn = 0x1
)

// AUTOC.LMS link modes (82599 datasheet 8.2.3.22.19; Linux ixgbe_type.h
// IXGBE_AUTOC_LMS_*). LMS 5 is reserved.
const (
	LMS1GNoAN      = 0 // 1 GbE, no auto-negotiation
	LMS10GNoAN     = 1 // 10 GbE parallel (XAUI / CX4), no auto-negotiation
	LMS1GAN        = 2 // 1 GbE with clause 37 auto-negotiation (KX)
	LMS10GSerial   = 3 // 10 GbE serial (SFI), no auto-negotiation
	LMSKX4KXKR     = 4 // KX4 / KX / KR backplane (clause 73) auto-negotiation
	LMSKX4KXKR1GAN = 6 // backplane auto-negotiation and 1 GbE clause 37
	LMSKX4KXKRSGM  = 7 // backplane auto-negotiation and SGMII
)
