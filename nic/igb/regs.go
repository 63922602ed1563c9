package igb

// 82576 register offsets and bits (82576 datasheet, section 8; Linux e1000_regs.h).
const (
	regCTRL    = 0x00000
	regSTATUS  = 0x00008
	regEECD    = 0x00010
	regCTRLEXT = 0x00018
	regMDIC    = 0x00020
	regICR     = 0x000C0
	regIMS     = 0x000D0
	regIMC     = 0x000D8
	regRCTL    = 0x00100
	regTCTL    = 0x00400

	regGPIE     = 0x01514
	regEICS     = 0x01520
	regEIMS     = 0x01524
	regEIMC     = 0x01528
	regEIAC     = 0x0152C
	regEIAM     = 0x01530
	regEICR     = 0x01580
	regIVARMisc = 0x01740

	regRLPML = 0x05004

	// Missed packets, read-to-clear (the other statistics are package intel's).
	regMPC = 0x04010

	regVFTA = 0x05600 // VLAN filter table, 128 registers
	regUTA  = 0x0A000 // unicast hash table array, 128 registers
)

func regEITR(n int) uint32   { return 0x01680 + 4*uint32(n) }
func regIVAR(n int) uint32   { return 0x01700 + 4*uint32(n) }
func regRDBAL(q int) uint32  { return 0x0C000 + 0x40*uint32(q) }
func regSRRCTL(q int) uint32 { return 0x0C00C + 0x40*uint32(q) }
func regRXDCTL(q int) uint32 { return 0x0C028 + 0x40*uint32(q) }
func regTDBAL(q int) uint32  { return 0x0E000 + 0x40*uint32(q) }
func regTXDCTL(q int) uint32 { return 0x0E028 + 0x40*uint32(q) }
func regRQDPC(q int) uint32  { return 0x0C030 + 0x40*uint32(q) }

// Register bits.
const (
	ctrlSLU    = 1 << 6 // set link up
	ctrlFrcSpd = 1 << 11
	ctrlFrcDpx = 1 << 12
	ctrlReset  = 1 << 26

	statusLU        = 1 << 1
	statusSpeedMask = 3 << 6
	statusSpeed100  = 1 << 6

	eecdAutoRead = 1 << 9

	ctrlExtDrvLoad = 1 << 28

	mdicRegShift = 16
	mdicPHYShift = 21
	mdicOpWrite  = 1 << 26
	mdicOpRead   = 2 << 26
	mdicReady    = 1 << 28
	mdicError    = 1 << 30

	icrTXDW = 1 << 0
	icrLSC  = 1 << 2
	icrRXDW = 1 << 7 // receive descriptor write-back (RXT0)

	rctlEN    = 1 << 1
	rctlUPE   = 1 << 3
	rctlMPE   = 1 << 4
	rctlLPE   = 1 << 5
	rctlBAM   = 1 << 15
	rctlSECRC = 1 << 26

	tctlEN        = 1 << 1
	tctlPSP       = 1 << 3
	tctlCT        = 0x0f << 4
	tctlCOLD      = 0x3f << 12
	tctlRTLC      = 1 << 24
	tctlConfigure = tctlPSP | tctlCT | tctlCOLD | tctlRTLC

	srrctlBSizePktMask  = 0x7f // 1 KB units
	srrctlDescTypeMask  = 0x0e000000
	srrctlDescAdvOneBuf = 0x02000000
	srrctlDropEn        = 1 << 31

	dxctlEnable = 1 << 25

	gpieNSICR      = 1 << 0
	gpieMSIXMode   = 1 << 4
	gpieEIAME      = 1 << 30
	gpiePBASupport = 1 << 31

	ivarValid = 0x80

	eitrIntervalShift = 2
	eitrIntervalMask  = 0x1fff << 2 // bits 14:2, 1 µs units
	eitrCntIgnr       = 1 << 31

	mrqcRSS       = 0x2
	mrqcRSSFields = 1<<16 | 1<<17 | 1<<20 | 1<<21 | 1<<22 | 1<<23 // IPv4/IPv6 (+TCP, UDP)

	allInterrupts = 0xffffffff

	stdFrameFCS = 1518   // largest frame without LPE, FCS included
	rlpmlMax    = 0x3fff // RLPML is 14 bits wide
)

// PHY (MII) registers and bits reached through MDIC; the internal PHY is at address 1.
const (
	phyAddr       = 1
	phyBMCR       = 0
	phyBMSR       = 1
	bmcrANRestart = 1 << 9
	bmcrANEnable  = 1 << 12
	bmsrLinkUp    = 1 << 2
	bmsrANDone    = 1 << 5
)
