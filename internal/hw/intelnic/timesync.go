package intelnic

// IEEE 1588 unit: the bits the 82576 and the 82599 share (82576 datasheet 7.9 and 8.16;
// 82599 datasheet 7.9 and 8.2.3.26; Linux e1000_defines.h, ixgbe_type.h). The register
// offsets differ: see i82576.TimesyncRegs and i82599.TimesyncRegs.
const (
	// TsyncValid (TSYNCRXCTL, TSYNCTXCTL bit 0) reads 1 while the latch holds a stamp
	// software has not read; reading the stamp's high register clears it.
	TsyncValid = 1 << 0
	// TsyncEnable (bit 4) turns timestamping on in that direction.
	TsyncEnable = 1 << 4
	// TsyncRxTypeMask is TSYNCRXCTL.Type (bits 3:1); TsyncRxTypeL2V2 stamps PTPv2 layer-2
	// frames whose message type matches TSYNCRXCFG (82576) or RXMTRL (82599).
	TsyncRxTypeMask = 0x0E
	TsyncRxTypeL2V2 = 0x00

	// EtqfFilterEnable82576 and EtqfFilterEnable82599 enable an ETQF filter (bit 26 on
	// the 82576, bit 31 on the 82599); EtqfIEEE1588 (bit 30, both) marks its ethertype as
	// IEEE 1588 for the timestamp unit; EtqfEtypeMask is the ethertype.
	EtqfFilterEnable82576 = 1 << 26
	EtqfFilterEnable82599 = 1 << 31
	EtqfIEEE1588          = 1 << 30
	EtqfEtypeMask         = 0xFFFF

	// TimincaPeriodShift is TIMINCA's increment period (bits 31:24); the increment value
	// is bits 23:0.
	TimincaPeriodShift = 24
	TimincaValueMask   = 0x00FFFFFF

	// TxdMacTstamp (advanced data descriptor cmd_type_len bit 19) asks the MAC to latch
	// the frame's transmit time in TXSTMPL/H (first descriptor of the frame).
	TxdMacTstamp = 1 << 19
	// RxStatusTS (advanced RX write-back status bit 16) marks the frame whose receive time
	// the RX latch holds.
	RxStatusTS = 1 << 16

	// EtherTypePTP is IEEE 1588's layer-2 ethertype.
	EtherTypePTP = 0x88F7
)

// TimesyncRegs are the offsets of one part's 1588 registers.
type TimesyncRegs struct {
	TSYNCRXCTL, TSYNCTXCTL uint32
	// RxMsgType is TSYNCRXCFG (82576: V2 message id in bits 15:8) or RXMTRL (82599: V2
	// message id in bits 15:8 as well).
	RxMsgType        uint32
	RXSTMPL, RXSTMPH uint32
	RXSATRL, RXSATRH uint32 // source id and (RXSATRH 31:16) sequence id of the stamped frame
	TXSTMPL, TXSTMPH uint32
	SYSTIML, SYSTIMH uint32
	TIMINCA          uint32
	TIMADJL, TIMADJH uint32
	ETQF             uint32 // ETQF(0); ETQF(n) is 4·n further
	EtqfEnable       uint32 // the part's ETQF filter enable bit
}
