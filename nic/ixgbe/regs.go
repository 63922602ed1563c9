package ixgbe

// 82599 register offsets and bits (82599 datasheet, section 8; Linux ixgbe_type.h).
const (
	regCTRL    = 0x00000
	regSTATUS  = 0x00008
	regCTRLEXT = 0x00018

	regEICR     = 0x00800
	regEICS     = 0x00808
	regEIAC     = 0x00810
	regEIMS     = 0x00880
	regEIMC     = 0x00888
	regEIAM     = 0x00890
	regGPIE     = 0x00898
	regIVARMisc = 0x00A00

	regRXCTRL    = 0x03000
	regRDRXCTL   = 0x02F00
	regHLREG0    = 0x04240
	regMAXFRS    = 0x04268
	regAUTOC     = 0x042A0
	regLINKS     = 0x042A4
	regFCTRL     = 0x05080
	regDMATXCTL  = 0x04A80
	regSECRXCTRL = 0x08D00
	regSECRXSTAT = 0x08D04
	regEEC       = 0x10010
	regVFTA      = 0x0A000 // VLAN filter table, 128 registers
	regUTA       = 0x0F400 // unicast hash table array, 128 registers

)

// Per-index registers.
func regEITR(n int) uint32      { return 0x00820 + 4*uint32(n) } // n < 24
func regIVAR(n int) uint32      { return 0x00900 + 4*uint32(n) } // n < 64
func regRDBAL(q int) uint32     { return 0x01000 + 0x40*uint32(q) }
func regRXDCTL(q int) uint32    { return 0x01028 + 0x40*uint32(q) }
func regDCARXCTRL(q int) uint32 { return 0x0100C + 0x40*uint32(q) } // q < 64
func regSRRCTL(q int) uint32    { return 0x02100 + 4*uint32(q) }    // q < 16
func regTDBAL(q int) uint32     { return 0x06000 + 0x40*uint32(q) }
func regTXDCTL(q int) uint32    { return 0x06028 + 0x40*uint32(q) }
func regMPC(n int) uint32       { return 0x03FA0 + 4*uint32(n) }    // n < 8
func regQPRDC(q int) uint32     { return 0x01430 + 0x40*uint32(q) } // q < 16
func regEIMCEx(n int) uint32    { return 0x00AB0 + 4*uint32(n) }    // n < 2

// Register bits.
const (
	ctrlLinkReset = 1 << 3
	ctrlReset     = 1 << 26
	ctrlResetMask = ctrlLinkReset | ctrlReset

	ctrlExtNSDis   = 1 << 16 // no-snoop disable
	ctrlExtDrvLoad = 1 << 28 // a driver owns the device (firmware keeps off it)

	eecAutoReadDone = 1 << 9

	rdrxctlCRCStrip = 1 << 1
	rdrxctlDMAIDone = 1 << 3
	// RSCFRSTSIZE cleared, RSCACKC and FCOE_WRFIX set: the bits Linux's
	// ixgbe_setup_rdrxctl says "hardware requires" on the 82599.
	rdrxctlRSCFrstSize = 0x1f << 17
	rdrxctlRSCACKC     = 1 << 25
	rdrxctlFCoEWrFix   = 1 << 26

	rxctrlRXEN = 1 << 0

	secrxctrlRxDis = 1 << 1 // SECRXCTRL.RX_DIS: halt the receive data path
	secrxstatRdy   = 1 << 0 // SECRXSTAT.SECRX_RDY: the data path is empty

	hlreg0TxCRCEn   = 1 << 0
	hlreg0RxCRCStrp = 1 << 1
	hlreg0JumboEn   = 1 << 2

	maxfrsShift   = 16 // MFS: largest frame accepted, FCS included
	stdFrameFCS   = 1518
	maxFrameFCS   = 9728 // the 82599's largest frame (IXGBE_MAX_JUMBO_FRAME_SIZE)
	hlreg0TxPadEn = 1 << 10

	fctrlMPE = 1 << 8
	fctrlUPE = 1 << 9
	fctrlBAM = 1 << 10

	srrctlBSizePktShift = 0 // 1 KB units, bits 4:0
	srrctlBSizePktMask  = 0x1f
	srrctlDescTypeMask  = 0x0e000000
	srrctlDescAdvOneBuf = 0x02000000
	srrctlDropEn        = 1 << 28

	dxctlEnable = 1 << 25 // RXDCTL/TXDCTL queue enable

	// DCA_RXCTRL bit 12 (relaxed ordering of descriptor write-backs) comes up set on
	// some parts; cleared, a write-back cannot pass the buffer data it describes.
	dcaRxCtrlDescWBRO = 1 << 12

	dmatxctlTE = 1 << 0

	autocAnRestart = 1 << 12
	autocLMSShift  = 13
	autocLMSMask   = 7 << autocLMSShift

	linksUp        = 1 << 30
	linksSpeedMask = 3 << 28
	linksSpeed10G  = 3 << 28
	linksSpeed1G   = 2 << 28
	linksSpeed100M = 1 << 28

	gpieMSIXMode   = 1 << 4
	gpieOCD        = 1 << 5
	gpieEIAME      = 1 << 30
	gpiePBASupport = 1 << 31

	ivarValid = 0x80
	// IVAR_MISC: byte 0 is the TCP timer's vector, byte 1 the other causes' (LSC).
	ivarMiscOtherShift = 8

	eicrRTxQMask = 0xffff  // queue causes (vector bits in MSI-X mode)
	eicrLSC      = 1 << 20 // link status change
	eimcAll      = 0xffffffff

	eitrIntervalShift = 3
	eitrIntervalMask  = 0x1ff << 3 // bits 11:3
	eitrCntWDis       = 1 << 31

	mrqcRSSEn     = 0x1
	mrqcIPv4TCP   = 1 << 16
	mrqcIPv4      = 1 << 17
	mrqcIPv6      = 1 << 20
	mrqcIPv6TCP   = 1 << 21
	mrqcIPv4UDP   = 1 << 22
	mrqcIPv6UDP   = 1 << 23
	mrqcRSSFields = mrqcIPv4TCP | mrqcIPv4 | mrqcIPv6 | mrqcIPv6TCP | mrqcIPv4UDP | mrqcIPv6UDP
)
