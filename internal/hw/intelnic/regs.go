package intelnic

// Registers at the same offset on the 82576 and the 82599.
const (
	CTRL    = 0x00000
	STATUS  = 0x00008
	CTRLEXT = 0x00018
	RXCSUM  = 0x05000
	MTA     = 0x05200 // multicast table array, 128 registers
	// Receive address 0, low and high: the 82576's 16 pairs, 8 bytes apart, start here;
	// on the 82599 it is the 82598-compatible alias of pairs 0-15 (see i82599.RAL0).
	RAL0  = 0x05400
	RAH0  = 0x05404
	MRQC  = 0x05818
	RETA  = 0x05C00 // redirection table, 32 registers of 4 entries
	RSSRK = 0x05C80 // RSS key, 10 registers
)

// Bits shared by both parts.
const (
	CtrlGIODisable = 1 << 2  // GIO master disable: stop issuing bus-master requests
	CtrlLinkReset  = 1 << 3  // 82599 LNK_RST
	CtrlReset      = 1 << 26 // RST: global device reset, self-clearing

	StatusGIOMaster = 1 << 19 // bus-master requests enabled

	CtrlExtDrvLoad = 1 << 28 // a driver owns the device (firmware keeps off it)

	// EEC (82599) / EECD (82576) bits.
	EecReq      = 1 << 6
	EecGnt      = 1 << 7
	EecPresent  = 1 << 8
	EecAutoRead = 1 << 9 // the EEPROM auto-read is done

	// EERD bits.
	EerdStart = 1 << 0
	EerdDone  = 1 << 1

	GpieMSIXMode   = 1 << 4
	GpieEIAME      = 1 << 30
	GpiePBASupport = 1 << 31

	IvarValid = 0x80 // an IVAR entry's valid bit

	SrrctlDescTypeMask  = 0x0e000000
	SrrctlDescAdvOneBuf = 0x02000000 // DESCTYPE 1: advanced, one buffer

	RxcsumPCSD = 1 << 13 // report the RSS hash instead of the fragment checksum
	RahAV      = 1 << 31 // RAH: the address is valid
)

// MRQC hash field bits (the enable field differs: i82576.MrqcRSS, i82599.MrqcRSSEn).
const (
	MrqcIPv4TCP   = 1 << 16
	MrqcIPv4      = 1 << 17
	MrqcIPv6      = 1 << 20
	MrqcIPv6TCP   = 1 << 21
	MrqcIPv4UDP   = 1 << 22
	MrqcIPv6UDP   = 1 << 23
	MrqcRSSFields = MrqcIPv4TCP | MrqcIPv4 | MrqcIPv6 | MrqcIPv6TCP | MrqcIPv4UDP | MrqcIPv6UDP
)

// Statistics registers both parts keep at the same offset (read to clear).
const (
	CRCERRS = 0x04000
	RLEC    = 0x04040
	PRC64   = 0x0405C // PRC64..PRC1522, 6 registers
	GPRC    = 0x04074
	BPRC    = 0x04078
	MPRC    = 0x0407C
	GPTC    = 0x04080
	GORCL   = 0x04088
	GORCH   = 0x0408C
	GOTCL   = 0x04090
	GOTCH   = 0x04094
	RUC     = 0x040A4
	RFC     = 0x040A8
	ROC     = 0x040AC
	RJC     = 0x040B0
	PTC64   = 0x040D8 // PTC64..PTC1522, 6 registers
	MPTC    = 0x040F0
	BPTC    = 0x040F4
)

// AllCauses, written to an interrupt mask clear register, masks every cause.
const AllCauses = 0xffffffff

// StdFrameFCS is the largest Ethernet frame without jumbo frames, FCS included.
const StdFrameFCS = 1518

// FCSLen is the bytes of an Ethernet frame check sequence, the CRC the MAC appends on
// transmit and strips on receive when told to.
const FCSLen = 4
