package nic

import (
	"encoding/binary"
	"net"
)

// PTP layer-2 frames (IEEE 1588-2008, annex F): an Ethernet header with ethertype
// 0x88F7 and a 34-byte PTPv2 common header, whose sequenceId (bytes 30-31, big-endian)
// the NICs' RX latch records (QEMU's igb: bytes 32-33, see PutPTP). Only what the
// Timesync unit looks at is filled in.
const (
	// EtherTypePTP is IEEE 1588's ethertype.
	EtherTypePTP = 0x88F7
	// PTPHeaderLen is the PTPv2 common header.
	PTPHeaderLen = 34
	// PTPFrameLen is the frame PutPTP writes: the Ethernet header, the PTP header and a
	// Sync message's 10-byte originTimestamp (58 bytes), padded to the Ethernet minimum.
	PTPFrameLen = 60
	// PTPSync is the Sync message type, the one the Timesync ports stamp on receive.
	PTPSync = 0
)

// PutPTP writes a PTPv2 layer-2 message of type msgType with sequence id seq from src to
// dst into f, which must hold PTPFrameLen bytes, and returns PTPFrameLen. Bytes of f
// beyond the message are left alone.
func PutPTP(f []byte, dst, src net.HardwareAddr, msgType uint8, seq uint16) int {
	_ = f[PTPFrameLen-1]
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], EtherTypePTP)
	h := f[14:PTPFrameLen]
	clear(h)             // the padding too
	h[0] = msgType & 0xF // transportSpecific 0
	h[1] = 2             // versionPTP
	binary.BigEndian.PutUint16(h[2:], PTPHeaderLen+10)
	copy(h[20:26], src) // clockIdentity: the MAC is enough to tell senders apart here
	binary.BigEndian.PutUint16(h[28:], 1)
	binary.BigEndian.PutUint16(h[30:], seq)
	// The same two bytes again as controlField and logMessageInterval: QEMU's igb latches
	// those in place of the sequenceId (its PTP header struct is not packed), so they
	// must tell frames apart too. No PTP node reads them from a Sync for anything.
	binary.BigEndian.PutUint16(h[32:], seq)
	return PTPFrameLen
}

// PTPSeq returns the sequence id and message type of f if it is a PTPv2 layer-2 frame.
func PTPSeq(f []byte) (seq uint16, msgType uint8, ok bool) {
	if len(f) < 14+PTPHeaderLen || binary.BigEndian.Uint16(f[12:]) != EtherTypePTP || f[15]&0xF != 2 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(f[14+30:]), f[14] & 0xF, true
}
