package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// maxBlock bounds a pcapng block the client accepts (a packet of MaxSnaplen bytes and
// its options fit many times over).
const maxBlock = 1 << 22

// ngBlock is one block of a pcapng stream as the client reads it. raw (the whole block)
// and data are valid until the next call of next.
type ngBlock struct {
	typ uint32
	raw []byte

	// EPB (and, for iface, ISB) fields.
	iface   uint32
	ns      int64 // the timestamp in nanoseconds since the epoch
	data    []byte
	origLen uint32
	// ISB: isb_ifdrop, or -1 if absent, and the comment.
	drop    int64
	comment string
}

// ngIface is what the reader keeps of an interface description block.
type ngIface struct {
	linkType uint16
	snaplen  uint32
	// units of a timestamp per second: 10^6 unless if_tsresol says otherwise.
	unitsPerSec uint64
}

// ngReader reads a pcapng stream block by block, in either byte order, checking each
// block's framing and the fields the client uses.
type ngReader struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	buf    []byte
	ifaces []ngIface
	// shb and idbs are the current section's header and interface blocks, verbatim,
	// for a ring-buffer file's start.
	shb  []byte
	idbs [][]byte
}

func newNgReader(r io.Reader) *ngReader {
	return &ngReader{r: bufio.NewReaderSize(r, 64<<10)}
}

var errMidBlock = errors.New("the stream ended inside a block")

// next reads the next block; io.EOF at a block boundary is the stream's end.
func (n *ngReader) next() (ngBlock, error) {
	var b ngBlock
	hdr, err := n.r.Peek(12)
	if err != nil {
		if err == io.EOF && len(hdr) == 0 {
			return b, io.EOF
		}
		if err == io.EOF {
			return b, errMidBlock
		}
		return b, err
	}
	typ := binary.LittleEndian.Uint32(hdr)
	if typ == blockSHB {
		switch binary.LittleEndian.Uint32(hdr[8:]) {
		case byteOrderMagic:
			n.order = binary.LittleEndian
		case 0x4D3C2B1A:
			n.order = binary.BigEndian
		default:
			return b, fmt.Errorf("section header: byte-order magic %#x", hdr[8:12])
		}
	} else if n.order == nil {
		return b, fmt.Errorf("block type %#x before the section header", typ)
	}
	b.typ = n.order.Uint32(hdr)
	l := n.order.Uint32(hdr[4:])
	if l < 12 || l%4 != 0 || l > maxBlock {
		return b, fmt.Errorf("block type %#x: length %d", b.typ, l)
	}
	if cap(n.buf) < int(l) {
		n.buf = make([]byte, l)
	}
	raw := n.buf[:l]
	if _, err := io.ReadFull(n.r, raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return b, errMidBlock
		}
		return b, err
	}
	if n.order.Uint32(raw[l-4:]) != l {
		return b, fmt.Errorf("block type %#x: trailing length %d, want %d", b.typ, n.order.Uint32(raw[l-4:]), l)
	}
	b.raw = raw
	body := raw[8 : l-4]
	switch b.typ {
	case blockSHB:
		if len(body) < 16 {
			return b, errors.New("section header: too short")
		}
		if major := n.order.Uint16(body[4:]); major != 1 {
			return b, fmt.Errorf("section header: version %d, want 1", major)
		}
		n.ifaces, n.idbs = n.ifaces[:0], n.idbs[:0]
		n.shb = append(n.shb[:0], raw...)
	case blockIDB:
		if len(body) < 8 {
			return b, errors.New("interface block: too short")
		}
		ifc := ngIface{linkType: n.order.Uint16(body), snaplen: n.order.Uint32(body[4:]), unitsPerSec: 1e6}
		err := n.options(body[8:], func(code uint16, v []byte) error {
			if code != optIfTsresol {
				return nil
			}
			if len(v) != 1 {
				return fmt.Errorf("if_tsresol: %d bytes", len(v))
			}
			e := uint64(v[0] & 0x7f)
			if v[0]&0x80 != 0 {
				if e > 63 {
					return fmt.Errorf("if_tsresol 2^-%d", e)
				}
				ifc.unitsPerSec = 1 << e
			} else {
				if e > 19 {
					return fmt.Errorf("if_tsresol 10^-%d", e)
				}
				ifc.unitsPerSec = uint64(math.Pow10(int(e)))
			}
			return nil
		})
		if err != nil {
			return b, fmt.Errorf("interface block %d: %w", len(n.ifaces), err)
		}
		n.ifaces = append(n.ifaces, ifc)
		n.idbs = append(n.idbs, append([]byte(nil), raw...))
	case blockEPB:
		if len(body) < 20 {
			return b, errors.New("packet block: too short")
		}
		b.iface = n.order.Uint32(body)
		if int(b.iface) >= len(n.ifaces) {
			return b, fmt.Errorf("packet block: interface %d of %d", b.iface, len(n.ifaces))
		}
		ts := uint64(n.order.Uint32(body[4:]))<<32 | uint64(n.order.Uint32(body[8:]))
		b.ns = toNanos(ts, n.ifaces[b.iface].unitsPerSec)
		c := n.order.Uint32(body[12:])
		b.origLen = n.order.Uint32(body[16:])
		if uint64(c) > uint64(len(body)-20) {
			return b, fmt.Errorf("packet block: %d bytes captured in a %d-byte block", c, l)
		}
		b.data = body[20 : 20+c]
	case blockISB:
		if len(body) < 12 {
			return b, errors.New("statistics block: too short")
		}
		b.iface, b.drop = n.order.Uint32(body), -1
		if int(b.iface) >= len(n.ifaces) {
			return b, fmt.Errorf("statistics block: interface %d of %d", b.iface, len(n.ifaces))
		}
		err := n.options(body[12:], func(code uint16, v []byte) error {
			if code == optComment {
				b.comment = string(v)
			}
			if code == optISBIfDrop {
				if len(v) != 8 {
					return fmt.Errorf("isb_ifdrop: %d bytes", len(v))
				}
				b.drop = int64(n.order.Uint64(v) & math.MaxInt64)
			}
			return nil
		})
		if err != nil {
			return b, fmt.Errorf("statistics block: %w", err)
		}
	}
	return b, nil
}

// options walks a block's options.
func (n *ngReader) options(b []byte, f func(code uint16, v []byte) error) error {
	for len(b) >= 4 {
		code, l := n.order.Uint16(b), int(n.order.Uint16(b[2:]))
		if code == optEnd {
			return nil
		}
		b = b[4:]
		if l > len(b) {
			return fmt.Errorf("option %d: %d bytes, %d left", code, l, len(b))
		}
		if err := f(code, b[:l]); err != nil {
			return err
		}
		b = b[min(align4(l), len(b)):]
	}
	return nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// toNanos converts ts units (unitsPerSec of them a second) to nanoseconds.
func toNanos(ts, unitsPerSec uint64) int64 {
	if unitsPerSec == 1e9 {
		return int64(ts)
	}
	sec, frac := ts/unitsPerSec, ts%unitsPerSec
	ns := frac * 1e9 / unitsPerSec
	if unitsPerSec > 1e9 { // frac*1e9 may overflow
		ns = uint64(float64(frac) * 1e9 / float64(unitsPerSec))
	}
	return int64(sec*1e9 + ns)
}
