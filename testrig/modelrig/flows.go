package modelrig

import (
	"encoding/binary"

	"github.com/uiod/uiod/sim/intel"
)

// Flow frames: IPv4/UDP, 10.0.0.1 → 10.0.0.2:4791, flow f from source port BasePort+f, its
// sequence number and flow number after the UDP header.
const (
	FrameLen = 64
	BasePort = 30000
	offSeq   = 14 + 20 + 8
	offFlow  = offSeq + 8
)

// fakeLen is the length of the completion sim/intel's RxUnpostedDD writes (FrameLen is
// longer, so a frame of this length is the fault's).
const fakeLen = 60

// FlowFrame builds frame seq of flow f in buf (at least FrameLen bytes) and returns it.
func FlowFrame(buf []byte, f int, seq uint64) []byte {
	b := buf[:FrameLen]
	clear(b)
	copy(b[0:6], []byte{2, 0, 0, 0, 0xee, 1})
	copy(b[6:12], []byte{2, 0, 0, 0, 0xff, 0})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], FrameLen-14)
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], uint16(BasePort+f))
	binary.BigEndian.PutUint16(udp[2:], 4791)
	binary.BigEndian.PutUint16(udp[4:], FrameLen-14-20)
	binary.BigEndian.PutUint64(b[offSeq:], seq)
	binary.BigEndian.PutUint32(b[offFlow:], uint32(f))
	return b
}

// FlowQueue is the RX queue of queues that RSS sends flow f to under key: the Toeplitz
// hash of the flow's addresses and ports, its low 7 bits indexing the redirection table
// the drivers program (entry i → queue i mod queues).
func FlowQueue(key []byte, f, queues int) int {
	in := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0x12, 0xb7}
	binary.BigEndian.PutUint16(in[8:], uint16(BasePort+f))
	return int(intel.Toeplitz(key, in)&127) % queues
}

// frame is port 1's far end: it counts the frames and checks each flow's order.
func (r *Rig) frame(b []byte, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(b) < offFlow+4 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
		r.foreign++
		return
	}
	f, seq := int(binary.BigEndian.Uint32(b[offFlow:])), binary.BigEndian.Uint64(b[offSeq:])
	if seq < r.next[f] {
		// An RxUnpostedDD write-back can land on the descriptor at RDT just as the driver
		// posts it, and the driver then takes the fake completion (length fakeLen) over the
		// buffer's previous contents: indistinguishable from a real one, so counted apart.
		if len(b) == fakeLen {
			r.stale++
			r.received++
			return
		}
		r.reorder++
	}
	r.next[f] = seq + 1
	r.received++
}
