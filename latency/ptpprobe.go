package latency

import (
	"encoding/binary"
	"fmt"

	"github.com/uiod/uiod/nic"
)

// PTP probes, for device-clock timestamps (Config.Stamps): a PTPv2 layer-2 Sync message
// (nic.PutPTP) whose sequenceId is the probe's sequence number modulo 2^16, followed by
// the usual probe payload {magic u32, sequence u64, send time i64}, then zero padding. A
// NIC's 1588 unit stamps such a frame on receive and, when asked, on transmit.
const (
	offPTPPayload = 14 + nic.PTPHeaderLen + 10
	// MinPTPFrameSize is the smallest probe with device-clock timestamps.
	MinPTPFrameSize = offPTPPayload + payloadLen
)

// ptpTemplate is a pre-built PTP probe filled in per send without allocating.
type ptpTemplate struct{ buf []byte }

func newPTPTemplate(a Addrs, size int, kind Kind) (*ptpTemplate, error) {
	if size < MinPTPFrameSize || size > MaxFrameSize {
		return nil, fmt.Errorf("frame size %d is outside %d..%d (a PTP probe needs %d bytes)", size, MinPTPFrameSize, MaxFrameSize, MinPTPFrameSize)
	}
	if len(a.SrcMAC) != 6 || len(a.DstMAC) != 6 {
		return nil, fmt.Errorf("source and destination MAC must be 6 bytes")
	}
	b := make([]byte, size)
	nic.PutPTP(b, a.DstMAC, a.SrcMAC, nic.PTPSync, 0)
	binary.BigEndian.PutUint32(b[offPTPPayload:], uint32(kind))
	return &ptpTemplate{buf: b}, nil
}

// stampFlow writes seq (also as the PTP sequenceId) and sentAt into the frame; a PTP
// probe has no UDP port, so every flow is the same frame.
func (t *ptpTemplate) stampFlow(seq uint64, sentAt int64, _ uint16) []byte {
	b := t.buf
	binary.BigEndian.PutUint16(b[14+30:], uint16(seq))
	binary.BigEndian.PutUint16(b[14+32:], uint16(seq)) // where QEMU's igb reads it (nic.PutPTP)
	binary.BigEndian.PutUint64(b[offPTPPayload+4:], seq)
	binary.BigEndian.PutUint64(b[offPTPPayload+12:], uint64(sentAt))
	return b
}

// probeTemplate is the probe frame of cfg: a PTP probe when it asks for device stamps.
func probeTemplate(cfg Config) (interface {
	stampFlow(seq uint64, sentAt int64, srcPort uint16) []byte
}, error) {
	if cfg.Stamps != nil {
		return newPTPTemplate(cfg.Addrs, cfg.Size, KindProbe)
	}
	return newFrameTemplate(cfg.Addrs, cfg.Size, KindProbe)
}

// parsePTPProbe reads a PTP probe; ok is false if frame is not a PTP frame at all.
func parsePTPProbe(frame []byte) (p Probe, ok bool, err error) {
	seq, _, isPTP := nic.PTPSeq(frame)
	if !isPTP {
		return Probe{}, false, nil
	}
	if len(frame) < MinPTPFrameSize {
		return Probe{}, true, ErrShortFrame
	}
	pl := frame[offPTPPayload:]
	k := Kind(binary.BigEndian.Uint32(pl))
	if k != KindProbe && k != KindBackground {
		return Probe{}, true, ErrNotProbe
	}
	p = Probe{Kind: k, Seq: binary.BigEndian.Uint64(pl[4:]), SentAt: int64(binary.BigEndian.Uint64(pl[12:]))}
	if uint16(p.Seq) != seq {
		return Probe{}, true, ErrNotProbe // the sequenceId is not the probe's
	}
	return p, true, nil
}
