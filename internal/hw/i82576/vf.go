package i82576

// The 82576 virtual function (82576 datasheet, section 8.27 "Virtual function registers";
// Linux igbvf regs.h and mbx.h): a 16 KiB BAR0 with the VF's own view of queue 0 and 1,
// its interrupt registers, statistics that count and wrap instead of clearing on read,
// and the VF side of the PF↔VF mailbox.
const (
	// VFDeviceID is the 82576 VF's PCI device id.
	VFDeviceID = 0x10CA
	// VFBAR0Size is the size of a VF's register BAR.
	VFBAR0Size = 0x4000
	// VFQueues is the queue pairs a VF has; VFVectors its MSI-X vectors.
	VFQueues  = 2
	VFVectors = 3

	VTCTRL   = 0x00000 // VF control: only RST (bit 26), a VF queue and interrupt reset
	VTSTATUS = 0x00008 // the PF's link status, as STATUS
	VTEICS   = 0x01520
	VTEIMS   = 0x01524
	VTEIMC   = 0x01528
	VTEIAC   = 0x0152C
	VTEIAM   = 0x01530
	VTEICR   = 0x01580
	VTEITR0  = 0x01680 // one per vector, 4 bytes apart
	VTIVAR0  = 0x01700 // queue 0 RX in bits 7:0, TX in 15:8; queue 1 in 23:16, 31:24
	// VTIVARMisc maps the mailbox ("other") cause to a vector in bits 7:0 (the PF's
	// IVAR_MISC uses bits 15:8).
	VTIVARMisc = 0x01740

	VFRXBase   = 0x02800 // VF queue 0's RX ring registers; queue 1 is VFQStride further
	VFTXBase   = 0x03800
	VFQStride  = 0x100
	VFMbxMem   = 0x00800 // VMBMEM: 16 words of mailbox memory
	VFMbxWords = 16
	V2PMailbox = 0x00C40

	// Statistics: 32-bit counters that wrap and are not cleared by a read.
	VFGPRC = 0x00F10
	VFGPTC = 0x00F14
	VFGORC = 0x00F18
	VFGOTC = 0x00F34
	VFMPRC = 0x00F3C
)

// V2PMAILBOX bits as the VF sees them.
const (
	MbxReq   = 1 << 0 // VF: a message for the PF is in the buffer
	MbxAck   = 1 << 1 // VF: the PF's message was read
	MbxVFU   = 1 << 2 // the VF owns the buffer
	MbxPFU   = 1 << 3 // the PF owns the buffer
	MbxPFSts = 1 << 4 // the PF wrote a message (read to clear)
	MbxPFAck = 1 << 5 // the PF took the VF's message (read to clear)
	MbxRSTI  = 1 << 6 // a PF reset is in progress
	MbxRSTD  = 1 << 7 // the PF completed a reset (read to clear)
	// MbxR2C are the bits a read clears.
	MbxR2C = MbxPFSts | MbxPFAck | MbxRSTD
)

// Mailbox messages (Linux igbvf mbx.h; the PF side is Linux igb's igb_rcv_msg_from_vf).
// The low 16 bits name the message, bits 23:16 carry its argument, and the PF's reply
// is the message with ACK or NACK, and CTS once the VF finished its reset handshake.
const (
	MsgAck        = 0x80000000
	MsgNack       = 0x40000000
	MsgCTS        = 0x20000000
	MsgInfoShift  = 16
	MsgInfoMask   = 0xFF << MsgInfoShift
	MsgTypeMask   = 0xFFFF
	MsgVFReset    = 0x01
	MsgSetMAC     = 0x02
	MsgSetMcast   = 0x03
	MsgSetVLAN    = 0x04
	MsgSetLPE     = 0x05
	MsgSetPromisc = 0x06
	// MsgAPINegotiate is the mailbox API negotiation of Intel's 10 GbE VFs (ixgbe's
	// IXGBE_VF_API_NEGOTIATE, API 1.0 = 0 in word 1). Linux igb's PF has one API and
	// answers it, like every message it does not know, with NACK: the VF then speaks the
	// base API.
	MsgAPINegotiate = 0x08
	APIBase         = 0
	// PromiscMcast is SET_PROMISC's argument for multicast promiscuous mode, the only one
	// igb grants a VF.
	PromiscMcast = 0x02 << MsgInfoShift
	// MsgPFControl is the PF's unsolicited message: a link change or a PF going down
	// (without CTS).
	MsgPFControl = 0x0100
	// MsgMcastMax is the most multicast hashes one SET_MULTICAST carries.
	MsgMcastMax = 30
	// VFMaxFrame is the largest frame (FCS included) the PF lets a VF receive: Linux
	// igb's MAX_JUMBO_FRAME_SIZE.
	VFMaxFrame = 9728
	// IcrVMMB is the PF's ICR cause of a VF mailbox event.
	IcrVMMB = 1 << 8
)
