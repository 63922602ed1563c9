package capture

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/net/bpf"

	"github.com/uiod/uiod/nic"
)

// A ring is a single-producer, single-consumer byte queue of variable-length records:
// the producer is one poll thread (inside Mirror), the consumer the session's writer.
// The producer never waits: a frame that does not fit is dropped and counted. head and
// tail count bytes ever consumed and produced (the producer owns tail and the counters,
// the consumer head), so the ring's memory is its size whatever the snaplen: a record
// is a recHdr-byte header and the frame's kept bytes, rounded up to 8.
//
// A record never wraps: when one does not fit before the end of the buffer, the
// producer skips to the start, marking the skipped bytes with a pad header (or leaving
// fewer than recHdr bytes, which the consumer skips without looking).
type ring struct {
	buf     []byte
	mask    uint64
	snaplen int
	head    atomic.Uint64
	tail    atomic.Uint64
	// Per interface: frames the mirror was given (every direction and queue), frames
	// that passed the session's direction, queue and BPF filter, and accepted frames
	// that did not fit.
	recv     []atomic.Uint64
	accepted []atomic.Uint64
	dropped  []atomic.Uint64
	busy     atomic.Bool // the producer is inside put (see Session.stop)
}

// The record header, in host byte order.
const (
	recHdr     = 24
	offTime    = 0  // int64: the poll's idle.Now()
	offOrigLen = 8  // uint32: the frame's length on the wire
	offCapLen  = 12 // uint32: bytes kept
	offIface   = 16 // uint16: interface (port) index in the session
	offQueue   = 18 // uint16
	offDir     = 20 // uint8
	offKind    = 21 // uint8: kindFrame or kindPad
	kindFrame  = 0
	kindPad    = 1
)

// record is one captured frame's header, as the consumer reads it.
type record struct {
	time    int64
	origLen uint32
	capLen  uint32
	iface   uint16
	queue   uint16
	dir     uint8
}

// newRing makes a ring of size bytes (a power of two, at least 2×(recHdr+snaplen)).
func newRing(size, snaplen, ifaces int) *ring {
	return &ring{
		buf:      make([]byte, size),
		mask:     uint64(size - 1),
		snaplen:  snaplen,
		recv:     make([]atomic.Uint64, ifaces),
		accepted: make([]atomic.Uint64, ifaces),
		dropped:  make([]atomic.Uint64, ifaces),
	}
}

func align8(n int) int { return (n + 7) &^ 7 }

// put copies the frames that pass vm (nil: every frame) into the ring, as many as fit,
// and counts the rest as dropped. pass reports whether the direction and queue filter
// let the burst through at all (the frames are counted as received either way).
func (r *ring) put(iface int, dir uint8, queue int, frames []*nic.Buf, now int64, pass bool, vm *bpf.VM) {
	r.recv[iface].Add(uint64(len(frames)))
	if !pass {
		return
	}
	size := uint64(len(r.buf))
	tail := r.tail.Load()
	free := size - (tail - r.head.Load())
	var accepted, dropped uint64
	for _, f := range frames {
		b := f.Bytes()
		c := min(len(b), r.snaplen)
		if vm != nil {
			k, err := vm.Run(b)
			if err != nil || k == 0 {
				continue
			}
			c = min(c, k)
		}
		accepted++
		need := uint64(align8(recHdr + c))
		pos := tail & r.mask
		skip := uint64(0)
		if size-pos < need {
			skip = size - pos
		}
		if need+skip > free {
			dropped++
			continue
		}
		if skip >= recHdr {
			r.buf[pos+offKind] = kindPad
		}
		if skip > 0 {
			tail += skip
			free -= skip
			pos = 0
		}
		h := r.buf[pos : pos+recHdr]
		binary.NativeEndian.PutUint64(h[offTime:], uint64(now))
		binary.NativeEndian.PutUint32(h[offOrigLen:], uint32(len(b)))
		binary.NativeEndian.PutUint32(h[offCapLen:], uint32(c))
		binary.NativeEndian.PutUint16(h[offIface:], uint16(iface))
		binary.NativeEndian.PutUint16(h[offQueue:], uint16(queue))
		h[offDir], h[offKind] = dir, kindFrame
		copy(r.buf[pos+recHdr:], b[:c])
		tail += need
		free -= need
	}
	if accepted > 0 {
		r.accepted[iface].Add(accepted)
	}
	if dropped > 0 {
		r.dropped[iface].Add(dropped)
	}
	r.tail.Store(tail)
}

// peek returns the oldest record and its bytes, valid until release, or false if the
// ring is empty. It skips the padding at the buffer's end.
func (r *ring) peek() (record, []byte, bool) {
	size := uint64(len(r.buf))
	head := r.head.Load()
	tail := r.tail.Load()
	for head != tail {
		pos := head & r.mask
		if size-pos < recHdr || r.buf[pos+offKind] == kindPad {
			head += size - pos
			r.head.Store(head)
			continue
		}
		h := r.buf[pos : pos+recHdr]
		rec := record{
			time:    int64(binary.NativeEndian.Uint64(h[offTime:])),
			origLen: binary.NativeEndian.Uint32(h[offOrigLen:]),
			capLen:  binary.NativeEndian.Uint32(h[offCapLen:]),
			iface:   binary.NativeEndian.Uint16(h[offIface:]),
			queue:   binary.NativeEndian.Uint16(h[offQueue:]),
			dir:     h[offDir],
		}
		return rec, r.buf[pos+recHdr : pos+recHdr+uint64(rec.capLen)], true
	}
	return record{}, nil, false
}

// release frees the record peek returned.
func (r *ring) release(rec record) {
	r.head.Add(uint64(align8(recHdr + int(rec.capLen))))
}
