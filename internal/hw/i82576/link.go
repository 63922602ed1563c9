package i82576

// Link set-up registers and bits beyond the copper PHY: the PCS of the SerDes and SGMII
// interfaces, the link mode the EEPROM loads into CTRL_EXT, the software-definable pins
// that power an SFP cage and the PHY's power-down bit (82576 datasheet 8.2, 8.15; Linux
// e1000_defines.h and e1000_regs.h).
const (
	SCTL     = 0x00024 // SerDes control
	CONNSW   = 0x00034 // copper/fiber switch control
	EEMNGCTL = 0x01010 // manageability EEPROM control: the PHY configuration is done
	PCSCFG0  = 0x04200 // PCS configuration 0
	PCSLCTL  = 0x04208 // PCS link control
	PCSLSTS  = 0x0420C // PCS link status (read only)
	PCSANADV = 0x04218 // PCS auto-negotiation advertisement

	CtrlFD      = 1 << 0  // full duplex (with FRCDPX)
	CtrlSpd1000 = 2 << 8  // speed 1000 (with FRCSPD)
	CtrlSWDPIN0 = 1 << 18 // software-definable pin 0
	CtrlSWDPIN1 = 1 << 19 // software-definable pin 1

	CtrlExtSDP3Data       = 1 << 7  // SDP3: drives an SFP cage's TX_DISABLE (1: laser off)
	CtrlExtI2CEna         = 1 << 25 // I2C access to an SFP module
	CtrlExtLinkModeMask   = 3 << 22 // link mode, loaded from the EEPROM
	CtrlExtLinkCopper     = 0 << 22 // internal copper PHY (GMII)
	CtrlExtLink1000BaseKX = 1 << 22 // 1000BASE-KX backplane
	CtrlExtLinkSGMII      = 2 << 22 // SGMII to an external PHY
	CtrlExtLinkSerDes     = 3 << 22 // internal SerDes (fiber, backplane)

	SctlDisableSerDesLoopback = 0x0400
	ConnswEnrgsrc             = 1 << 2 // signal detect from the SerDes energy detector

	PcsCfgPCSEn = 1 << 3 // PCS enabled

	PcsLctlFLVLinkUp = 1 << 0  // forced link value
	PcsLctlFSV1000   = 1 << 2  // forced speed 1000
	PcsLctlFDVFull   = 1 << 3  // forced duplex full
	PcsLctlFSD       = 1 << 4  // force speed and duplex
	PcsLctlForceLink = 1 << 5  // force the link value
	PcsLctlForceFC   = 1 << 7  // force flow control
	PcsLctlANEnable  = 1 << 16 // clause 37 auto-negotiation
	PcsLctlANRestart = 1 << 17 // restart it (self-clearing)
	PcsLctlANTimeout = 1 << 18 // link up without auto-negotiation after a timeout

	PcsLstsLinkOK     = 1 << 0
	PcsLstsSpeed100   = 1 << 1
	PcsLstsSpeed1000  = 1 << 2
	PcsLstsDuplexFull = 1 << 3
	PcsLstsSyncOK     = 1 << 4
	PcsLstsANComplete = 1 << 16

	BmcrPowerDown = 1 << 11 // PHY control: power down (a driver that downs the port sets it)
)
